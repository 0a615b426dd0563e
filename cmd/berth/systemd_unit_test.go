package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitPath = "../../contrib/systemd/berth.service"

// TestSystemdUnitSettings checks the settings berth serve relies on: the
// notify protocol, SIGHUP as reload, pods outliving the daemon.
func TestSystemdUnitSettings(t *testing.T) {
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"Type=notify", "ExecStart=/usr/local/bin/berth serve", "ExecReload=/bin/kill -HUP $MAINPID",
		"KillMode=process", "Delegate=yes", "LimitNOFILE=1048576", "Restart=on-failure",
		"After=network-online.target local-fs.target", "WantedBy=multi-user.target",
	} {
		if !lines[want] {
			t.Errorf("%s lacks the line %q", unitPath, want)
		}
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit (with
// ExecStart pointing at an executable that exists here) and fails on any
// complaint: verify exits 0 on unknown keys and bad values, only printing
// them.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "berth.service")
	text := strings.Replace(string(b), "/usr/local/bin/berth", self, 1)
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitPath, err, out)
	}
}
