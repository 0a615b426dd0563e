package monitor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

func sh(script string) []string { return []string{"/bin/busybox", "sh", "-c", script} }

func TestContainerLogsAndExitCode(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-exit3"
	logPath, pid := e.create(t, id, bundleOpts{args: sh(`printf 'out1\nout2\n'; echo err1 >&2; printf tail; exit 3`)})
	before := time.Now()
	e.start(t, id)
	rec := e.waitExitFile(t, id, 10*time.Second)
	if rec.ExitCode != 3 || rec.Signal != 0 || rec.Pid != pid || rec.OOMKilled {
		t.Fatalf("exit record %+v, want code 3 of pid %d", rec, pid)
	}
	if rec.FinishedAt.Before(before) || time.Since(rec.FinishedAt) > time.Minute {
		t.Fatalf("FinishedAt %v, want after %v", rec.FinishedAt, before)
	}
	recs := readLog(t, logPath)
	if got := crilog.Lines(recs, crilog.Stdout); !slices.Equal(got, []string{"out1", "out2", "tail"}) {
		t.Fatalf("stdout lines %q", got)
	}
	if got := crilog.Lines(recs, crilog.Stderr); !slices.Equal(got, []string{"err1"}) {
		t.Fatalf("stderr lines %q", got)
	}
	// stdout and stderr are two FIFOs, read as each has data: their records
	// interleave in no fixed order, so the tail is the last of stdout's.
	var last crilog.Record
	for _, r := range recs {
		if r.Stream == crilog.Stdout {
			last = r
		}
	}
	if !last.Partial || string(last.Content) != "tail" {
		t.Fatalf("unterminated tail: got %+v, want a P record", last)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := e.client.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].Running || infos[0].Exit == nil || infos[0].Exit.ExitCode != 3 {
		t.Fatalf("list: %+v %v", infos, err)
	}
	if err := e.client.Forget(ctx, id); err != nil {
		t.Fatal(err)
	}
	if infos, _ := e.client.List(ctx); len(infos) != 0 {
		t.Fatalf("after forget: %+v", infos)
	}
}

// TestRunCreatesAndStartsInOneCall: a create with Run starts the
// container (runc run --detach), logs it and records its exit like a
// created and started one; a start afterwards is refused.
func TestRunCreatesAndStartsInOneCall(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-run"
	logPath, pid, started := e.run(t, id, bundleOpts{args: sh(`echo ran; exit 4`)})
	if !started || pid <= 0 {
		t.Fatalf("run: pid %d, started %v; want a started container", pid, started)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.client.Start(ctx, id); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("start after run: %v, want FailedPrecondition (started, or exited)", err)
	}
	rec := e.waitExitFile(t, id, 10*time.Second)
	if rec.Pid != pid || rec.ExitCode != 4 {
		t.Errorf("exit record %+v, want code 4 of pid %d", rec, pid)
	}
	if got := crilog.Lines(readLog(t, logPath), crilog.Stdout); !slices.Equal(got, []string{"ran"}) {
		t.Errorf("stdout lines %q", got)
	}
}

func TestKilledContainerExits137(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-kill"
	e.create(t, id, bundleOpts{args: sh(`echo up; exec sleep 100`)})
	e.start(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.runc.Kill(ctx, id, syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
	rec := e.waitExitFile(t, id, 10*time.Second)
	if rec.ExitCode != 137 || rec.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit record %+v, want 137 / signal 9", rec)
	}
}

func TestOOMKilledContainer(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-oom"
	e.create(t, id, bundleOpts{args: sh(`a=xxxxxxxx; while true; do a=$a$a; done`), memLimit: 16 << 20})
	e.start(t, id)
	rec := e.waitExitFile(t, id, 30*time.Second)
	if !rec.OOMKilled || rec.ExitCode != 137 {
		t.Fatalf("exit record %+v, want OOM-killed with 137", rec)
	}
}

func TestTerminalContainerLogsPtyOutput(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-tty"
	logPath, _ := e.create(t, id, bundleOpts{terminal: true, args: sh(`[ -t 1 ] && echo "hello tty"; exit 0`)})
	e.start(t, id)
	if rec := e.waitExitFile(t, id, 10*time.Second); rec.ExitCode != 0 {
		t.Fatalf("exit record %+v, want 0 (stdout is a terminal)", rec)
	}
	recs := readLog(t, logPath)
	if got := crilog.Lines(recs, crilog.Stdout); !slices.Equal(got, []string{"hello tty"}) {
		t.Fatalf("stdout lines %q, want [hello tty]", got)
	}
}

// The daemon that launched the monitor is killed with SIGKILL; the monitor
// keeps serving, logging and recording exits on its own.
func TestMonitorOutlivesDaemonAndLogsAlone(t *testing.T) {
	e := newEnv(t)
	opts, _ := json.Marshal(e.launchOptions(t))
	daemon := exec.Command(os.Args[0], "-test.run=^$")
	daemon.Env = append(os.Environ(), launcherEnv+"="+string(opts))
	out, _ := daemon.StdoutPipe()
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = daemon.Process.Kill() // failing anyway
		_ = daemon.Wait()
		t.Fatalf("launcher: %q", line)
	}
	e.pid = pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // it may have exited
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait() // "signal: killed"
	e.adopt(t, pid)

	id := e.prefix + "-alone"
	logPath, _ := e.create(t, id, bundleOpts{args: sh(`i=0; while [ $i -lt 20 ]; do echo line$i; i=$((i+1)); sleep 0.1; done`)})
	e.start(t, id)
	e.client = nil // nothing talks to the monitor any more
	time.Sleep(500 * time.Millisecond)
	t.Logf("monitor PSS with one running container: %d kB", pss(t, pid))
	rec := e.waitExitFile(t, id, 15*time.Second)
	if rec.ExitCode != 0 {
		t.Fatalf("exit record %+v", rec)
	}
	if n := len(crilog.Lines(readLog(t, logPath), crilog.Stdout)); n != 20 {
		t.Fatalf("got %d stdout lines, want 20", n)
	}
}

func pss(t *testing.T, pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

func TestShutdownStopsMonitor(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.client.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.client.Ping(ctx) == nil {
		if time.Now().After(deadline) {
			t.Fatal("monitor still answers after shutdown")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(e.socket); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestFailedCreateRollsBack(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-bad"
	bundle, cgroup := e.bundle(t, id, bundleOpts{args: []string{"/bin/does-not-exist"}})
	logPath := e.dir + "/logs/bad.log"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = e.runc.Delete(context.Background(), id, true) }) // the create may have failed before runc made it
	req := monitor.CreateRequest{ID: id, Bundle: bundle + "-missing", LogPath: logPath, CgroupPath: cgroup}
	_, err := e.client.Create(ctx, req)
	if err == nil || !strings.Contains(err.Error(), bundle+"-missing/"+monitor.StdoutFIFO) {
		t.Fatalf("create of a missing bundle: got %v, want the output FIFO's error naming the bundle", err)
	}
	if _, err := os.Stat(logPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("log file left behind: %v", err)
	}
	if states, _ := e.runc.List(ctx); len(states) != 0 {
		t.Fatalf("runc still has %+v", states)
	}
	req.Bundle = bundle
	_, err = e.client.Create(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "/bin/does-not-exist") {
		t.Fatalf("create of a missing executable: got %v, want runc's message", err)
	}
	if states, _ := e.runc.List(ctx); len(states) != 0 {
		t.Fatalf("runc still has %+v", states)
	}
	// The id is free again; a duplicate is refused.
	editSpec(t, bundle+"/config.json", bundleOpts{args: sh("exec sleep 100")}, cgroup)
	if _, err := e.client.Create(ctx, req); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := e.client.Create(ctx, req); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("duplicate: got %v, want AlreadyExists", err)
	}
	if err := e.client.Start(ctx, "unknown"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("start of unknown: got %v, want NotFound", err)
	}
}

// With Stdin the monitor holds the stdin pipe open: a read blocks instead
// of seeing EOF, as it does without Stdin.
func TestStdinHeldOpen(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, withStdin := range []bool{false, true} {
		id := e.prefix + "-stdin-" + strconv.FormatBool(withStdin)
		bundle, cgroup := e.bundle(t, id, bundleOpts{args: sh(`read line; exit 4`)})
		t.Cleanup(func() { _ = e.runc.Delete(context.Background(), id, true) }) // it may not exist
		_, err := e.client.Create(ctx, monitor.CreateRequest{ID: id, Bundle: bundle, LogPath: e.dir + "/" + id + ".log",
			Stdin: withStdin, CgroupPath: cgroup})
		if err != nil {
			t.Fatal(err)
		}
		e.start(t, id)
		time.Sleep(500 * time.Millisecond)
		_, err = monitor.ReadExitFile(e.exitDir, id)
		if exited := err == nil; exited == withStdin {
			t.Fatalf("stdin %v: exited=%v after 500ms", withStdin, exited)
		}
	}
}

// TestClientGoneBeforeTheAnswer: a daemon killed while the monitor ran
// runc for it hangs up; the monitor finishes the create, keeps the
// container and answers the next client.
func TestClientGoneBeforeTheAnswer(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-hangup"
	bundle, cgroup := e.bundle(t, id, bundleOpts{args: sh("exec sleep 100")})
	t.Cleanup(func() { _ = e.runc.Delete(context.Background(), id, true) })
	conn, err := net.Dial("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	req := monitor.Request{Version: monitor.ProtocolVersion, Op: monitor.OpCreate,
		Create: &monitor.CreateRequest{ID: id, Bundle: bundle, CgroupPath: cgroup, Run: true}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitFor(t, "the container listed as running", func() bool {
		infos, err := e.client.List(ctx)
		return err == nil && len(infos) == 1 && infos[0].Running
	})
	if err := e.client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
