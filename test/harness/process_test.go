package harness

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func shProcess(t *testing.T, script string) *Process {
	t.Helper()
	p := &Process{Name: "sh", Bin: "/bin/sh", Args: []string{"-c", script}, LogPath: filepath.Join(t.TempDir(), "sh.log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if strings.Contains(script, "echo ready") {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.LogTail(5), "ready\n") { // its trap is set
			if time.Now().After(deadline) {
				t.Fatalf("the script is not ready after 10s:\n%s", p.LogTail(5))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return p
}

// waitEnded waits until p no longer runs.
func waitEnded(t *testing.T, p *Process) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs after 10s", p.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProcessStopAndLogAcrossRestarts(t *testing.T) {
	p := shProcess(t, `echo first; trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
	if !p.Running() || p.Pid() == 0 || p.Exited() {
		t.Fatalf("after Start: running %v pid %d exited %v", p.Running(), p.Pid(), p.Exited())
	}
	p.CleanExit = true
	if err := p.Stop(5 * time.Second); err != nil {
		t.Errorf("Stop of a process that exits 0 on SIGTERM: %v", err)
	}
	if p.Running() || p.Exited() || p.Pid() != 0 || p.Stop(time.Second) != nil {
		t.Errorf("after Stop: running %v exited %v pid %d; want none, and a second Stop a no-op", p.Running(), p.Exited(), p.Pid())
	}
	p.Args = []string{"-c", "echo second; exit 3"}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, p)
	if !p.Exited() || !strings.Contains(p.ExitStatus(), "exit status 3") {
		t.Errorf("a run that exits 3: exited %v, status %q", p.Exited(), p.ExitStatus())
	}
	if err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "exited on its own") {
		t.Errorf("Stop after an unasked exit: %v; want an error saying so", err)
	}
	tail := p.LogTail(10)
	if strings.Count(tail, "=== sh started at") != 2 || !strings.Contains(tail, "first\n") || !strings.Contains(tail, "second\n") {
		t.Errorf("the log does not keep both runs:\n%s", tail)
	}
}

func TestProcessStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	p := shProcess(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	if err := p.Stop(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop of a process that ignores SIGTERM: %v; want it killed and said so", err)
	}
	if p.Running() {
		t.Error("still running after Stop")
	}
}

func TestProcessCleanExitFailsOnAFailureAfterSIGTERM(t *testing.T) {
	p := shProcess(t, `trap 'exit 4' TERM; echo ready; while :; do sleep 0.05; done`)
	p.CleanExit = true
	if err := p.Stop(5 * time.Second); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("Stop with CleanExit of a process exiting 4: %v; want the status", err)
	}
	q := shProcess(t, `sleep 60`)
	q.Kill()
	if q.Running() || q.Exited() {
		t.Errorf("after Kill: running %v, exited %v; want neither (the exit was asked for)", q.Running(), q.Exited())
	}
}
