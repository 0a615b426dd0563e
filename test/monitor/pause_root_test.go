package monitor_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childrenOf lists the pids whose parent is ppid, with their state letter.
func childrenOf(ppid int) map[int]string {
	kids := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			kids[pid] = f[0]
		}
	}
	return kids
}

func TestPauseReapsOrphansAndExitsOnSIGTERM(t *testing.T) {
	requireRoot(t)
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("nsenter not found")
	}
	_, pauseBin := binaries(t)
	if out, err := exec.Command(pauseBin, "-v").Output(); err != nil || string(out) != "berth-pause 0.0.0-dev\n" {
		t.Fatalf("-v: %q %v", out, err)
	}
	pause := exec.Command(pauseBin)
	pause.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := pause.Start(); err != nil {
		t.Fatal(err)
	}
	pid := pause.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- pause.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL) // it may have exited
		<-exited                               //nolint:errcheck // killed, or checked by the test
	})
	time.Sleep(100 * time.Millisecond) // let it install its handlers

	// A shell in pause's PID namespace leaves a sleeper behind: the
	// sleeper is reparented to pause, which must reap it when it ends.
	orphan := exec.Command(nsenter, "--target", strconv.Itoa(pid), "--pid", "--",
		"/bin/busybox", "sh", "-c", "/bin/busybox sleep 1 & exit 0")
	// No output pipes: the sleeper would hold them and delay Run.
	if err := orphan.Run(); err != nil {
		t.Fatalf("orphan: %v", err)
	}
	if len(childrenOf(pid)) == 0 {
		t.Fatal("no orphan was reparented to pause")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(childrenOf(pid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("children of pause not reaped: %v", childrenOf(pid))
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for cleanup
		if err != nil {
			t.Fatalf("pause on SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pause ignored SIGTERM")
	}
}
