package monitord

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func TestReaperExecReportsStatus(t *testing.T) {
	r := NewReaper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { r.Run(ctx); close(ran) }()
	// Run must be over before the next test: a reaper reaps every child of
	// the process, and would take the next test's.
	defer func() { cancel(); <-ran }()
	if err := r.Exec(ctx, exec.Command("/bin/sh", "-c", "exit 0")); err != nil {
		t.Fatalf("exit 0: %v", err)
	}
	if err := r.Exec(ctx, exec.Command("/bin/sh", "-c", "exit 5")); err == nil || err.Error() != "exit status 5" {
		t.Fatalf("exit 5: got %v", err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	start := time.Now()
	if err := r.Exec(short, exec.Command("/bin/sleep", "10")); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled sleep: got %v after %s", err, time.Since(start))
	}
}

// An exit reaped before its pid was known (a container init that dies
// while runc create is still returning) is kept by the subscription.
func TestReaperClaimSeesEarlierExit(t *testing.T) {
	r := NewReaper()
	sub := r.Subscribe()
	cmd := exec.Command("/bin/sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Process.Release(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(sub.exits) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		r.reap()
	}
	select {
	case e := <-r.Claim(sub, pid):
		if e.Pid != pid || e.Status.ExitStatus() != 7 {
			t.Fatalf("got %+v, want pid %d status 7", e, pid)
		}
	case <-time.After(time.Second):
		t.Fatal("claimed exit not delivered")
	}
	if len(r.subs) != 0 {
		t.Fatal("claim left the subscription registered")
	}
}
