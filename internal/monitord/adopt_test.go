package monitord

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// TestAdoptReadsOnAndReportsAnUnknownExit: a monitor adopting a container
// (here a sleep this test started, with output FIFOs in its "bundle") logs
// what the process writes into its FIFOs after the adoption, and when the
// process ends writes an exit file that says the status is unknown.
func TestAdoptReadsOnAndReportsAnUnknownExit(t *testing.T) {
	dir := t.TempDir()
	bundle, exits := filepath.Join(dir, "bundle"), filepath.Join(dir, "exits")
	for _, d := range []string{bundle, exits} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// What the dead monitor left: the FIFOs, and the container's write end.
	var writers []*os.File
	for _, name := range []string{monitor.StdoutFIFO, monitor.StderrFIFO} {
		r, w, err := makeFIFO(bundle, name)
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the dead monitor's read end
		writers = append(writers, w)
	}
	proc := exec.Command("sleep", "30")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })

	s := newServer(Config{Pod: "p", Socket: filepath.Join(dir, "m.sock"), ExitDir: exits})
	req := monitor.AdoptRequest{ID: "c1", Pid: proc.Process.Pid, Started: true, Bundle: bundle, LogDirectory: dir, LogRelPath: "c1.log"}
	if err := s.adopt(req); err != nil {
		t.Fatal(err)
	}
	if err := s.adopt(req); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("a second adoption = %v, want AlreadyExists", err)
	}
	if _, err := writers[0].WriteString("after the takeover\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the adopted output in the log", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "c1.log"))
		return strings.Contains(string(b), "stdout F after the takeover")
	})

	_ = proc.Process.Kill()
	_ = proc.Wait()
	closeAll(writers) // the container's end goes with it
	waitFor(t, "an exit file with an unknown status", func() bool {
		x, err := monitor.ReadExitFile(exits, "c1")
		return err == nil && x.Unknown && x.ExitCode == 255
	})
	if infos := s.list(); len(infos) != 1 || infos[0].Running {
		t.Errorf("list after the exit = %+v", infos)
	}
}

// TestAdoptRefusesAGonePidAndBadInput: no process, no adoption.
func TestAdoptRefusesAGonePidAndBadInput(t *testing.T) {
	dir := t.TempDir()
	s := newServer(Config{Pod: "p", Socket: filepath.Join(dir, "m.sock"), ExitDir: dir})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := s.adopt(monitor.AdoptRequest{ID: "c1", Pid: gone.Process.Pid}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("adopt of a gone pid = %v, want NotFound", err)
	}
	for _, r := range []monitor.AdoptRequest{{ID: "", Pid: 1}, {ID: "../x", Pid: 1}, {ID: "c", Pid: 0}} {
		if err := s.adopt(r); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("adopt %+v = %v, want InvalidArgument", r, err)
		}
	}
	if len(s.list()) != 0 {
		t.Errorf("refused adoptions left records: %+v", s.list())
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
