package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// daemonProfiles reads berth serve's mutex and block profiles (its [debug]
// pprof_socket) before and after one phase, and summarises where the
// daemon's goroutines waited in between (go tool pprof -top -base).
type daemonProfiles struct {
	socket, dir string
	label       string // the phase, in the report
	// top are the summaries, by profile name; err says why there are none.
	top map[string]string
	err string
}

// profileNames are the profiles read: lock contention and blocking.
var profileNames = []string{"mutex", "block"}

// before saves the profiles as they stand.
func (p *daemonProfiles) before(ctx context.Context) {
	if err := p.save(ctx, "before"); err != nil {
		p.err = err.Error()
	}
}

// after saves them again and summarises the difference.
func (p *daemonProfiles) after(ctx context.Context) {
	if p.err != "" {
		return
	}
	if err := p.save(ctx, "after"); err != nil {
		p.err = err.Error()
		return
	}
	p.top = map[string]string{}
	for _, name := range profileNames {
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=12",
			"-base", p.path(name, "before"), p.path(name, "after")).CombinedOutput()
		if err != nil {
			p.err = fmt.Sprintf("go tool pprof %s: %v: %s", name, err, firstLine(string(out)))
			return
		}
		p.top[name] = strings.TrimSpace(string(out))
	}
}

func (p *daemonProfiles) path(name, when string) string {
	return filepath.Join(p.dir, name+"-"+when+".pb.gz")
}

// save fetches each profile over the unix socket into dir.
func (p *daemonProfiles) save(ctx context.Context, when string) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.socket)
		}}}
	for _, name := range profileNames {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://berth/debug/pprof/"+name, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("profile %s: %d %v", name, resp.StatusCode, err)
		}
		if err := os.WriteFile(p.path(name, when), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeProfiles writes the summaries into the report.
func writeProfiles(w *strings.Builder, p *daemonProfiles) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "### Where berth serve waited: mutex and block profiles, %s\n\n", p.label)
	if p.err != "" {
		fmt.Fprintf(w, "Not read: %s.\n\n", p.err)
		return
	}
	fmt.Fprintf(w, "The daemon's `[debug] pprof_socket` profiles, the phase's share (`go tool pprof -top -base`): "+
		"**mutex** is time goroutines waited for a lock another held (one event in %d sampled), "+
		"**block** time they blocked on channels, selects, locks and syscalls' conditions (events of at least 100 µs). "+
		"Waiting for runc, a CNI plugin or the monitor's answer blocks in a read, which neither profile counts.\n\n", 5)
	for _, name := range profileNames {
		fmt.Fprintf(w, "%s:\n\n```\n%s\n```\n\n", name, p.top[name])
	}
}
