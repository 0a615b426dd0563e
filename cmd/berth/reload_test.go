package main

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/sdnotify"
)

type recordedImageSettings struct {
	pulls  []image.PullConfig
	limits []image.Limits
}

func (r *recordedImageSettings) ConfigurePull(c image.PullConfig) { r.pulls = append(r.pulls, c) }
func (r *recordedImageSettings) SetLimits(l image.Limits)         { r.limits = append(r.limits, l) }

// newTestReloader runs with the config file at path as loaded now; its
// log goes to logs.
func newTestReloader(t *testing.T, path string, logs *bytes.Buffer) (*reloader, *recordedImageSettings) {
	t.Helper()
	load := func() (config.Config, error) { return config.Load(path, true) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	level.Set(cfg.SlogLevel())
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	images := &recordedImageSettings{}
	t.Setenv("NOTIFY_SOCKET", "")
	return &reloader{load: load, running: cfg, level: level, images: images, log: log, notify: sdnotify.FromEnvironment(log)}, images
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReloadAppliesLogLevelAndImageSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeConfig(t, path, "log_level = \"warn\"\n")
	var logs bytes.Buffer
	r, images := newTestReloader(t, path, &logs)
	writeConfig(t, path, "log_level = \"debug\"\nroot_dir = \"/srv/berth\"\n[registry]\nmax_concurrent_downloads = 7\n[images]\nmax_layer_entries = 10\n")
	r.reload()
	if got := r.level.Level(); got != slog.LevelDebug {
		t.Errorf("log level after reload = %v, want DEBUG", got)
	}
	if len(images.pulls) != 1 || images.pulls[0].MaxConcurrentDownloads != 7 {
		t.Errorf("pull settings applied: %+v, want one with max_concurrent_downloads 7", images.pulls)
	}
	if len(images.limits) != 1 || images.limits[0].MaxEntries != 10 {
		t.Errorf("limits applied: %+v, want one with max entries 10", images.limits)
	}
	if r.running.RootDir != config.DefaultRootDir {
		t.Errorf("root_dir is now %q: only a restart may change it", r.running.RootDir)
	}
	out := logs.String()
	for _, want := range []string{
		`msg="config reloaded" changed="[log_level registry.max_concurrent_downloads images.max_layer_entries]"`,
		`keys=[root_dir]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	// root_dir still differs from the running one: reported again.
	logs.Reset()
	r.reload()
	if !strings.Contains(logs.String(), `changed=[] log_level=debug`) || !strings.Contains(logs.String(), `keys=[root_dir]`) {
		t.Errorf("second reload log:\n%s", logs.String())
	}
}

func TestReloadKeepsTheRunningConfigOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeConfig(t, path, "log_level = \"info\"\n")
	var logs bytes.Buffer
	r, images := newTestReloader(t, path, &logs)
	for _, bad := range []string{"log_level = \"loud\"\n", "log_level = \n", "no_such_key = 1\n"} {
		writeConfig(t, path, bad)
		logs.Reset()
		r.reload()
		if r.level.Level() != slog.LevelInfo || r.running.LogLevel != "info" {
			t.Errorf("%q: level %v, running %q; want info kept", bad, r.level.Level(), r.running.LogLevel)
		}
		if !strings.Contains(logs.String(), "config reload failed; the running configuration is kept") {
			t.Errorf("%q: log lacks the failure:\n%s", bad, logs.String())
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.reload()
	if len(images.pulls)+len(images.limits) != 0 || r.level.Level() != slog.LevelInfo {
		t.Errorf("a failed reload changed settings: %+v %+v, level %v", images.pulls, images.limits, r.level.Level())
	}
}

// TestReloadNotifies checks RELOADING=1 then READY=1, also when the new
// configuration is refused.
func TestReloadNotifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeConfig(t, path, "")
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var logs bytes.Buffer
	r, _ := newTestReloader(t, path, &logs)
	t.Setenv("NOTIFY_SOCKET", sock)
	r.notify = sdnotify.FromEnvironment(r.log)
	for _, text := range []string{"log_level = \"debug\"\n", "log_level = \"loud\"\n"} {
		writeConfig(t, path, text)
		r.reload()
		for _, want := range []string{"RELOADING=1\n", "READY=1\n"} {
			buf := make([]byte, 512)
			if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			n, err := conn.Read(buf)
			if err != nil || !strings.HasPrefix(string(buf[:n]), want) {
				t.Errorf("%q: got %q, %v; want %q first", text, buf[:n], err, want)
			}
		}
	}
}
