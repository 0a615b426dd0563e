package pod

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestBoundedBuffersShareOneBudget(t *testing.T) {
	out, errOut := newBoundedBuffers(7)
	for _, w := range []struct {
		b     *boundedBuffer
		chunk string
	}{{out, "abc"}, {errOut, "XY"}, {out, "defg"}, {errOut, "Z"}} {
		if n, err := w.b.Write([]byte(w.chunk)); n != len(w.chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want every byte accepted", w.chunk, n, err)
		}
	}
	if got, gotErr := string(out.Bytes()), string(errOut.Bytes()); got != "abcde" || gotErr != "XY" {
		t.Errorf("kept %q and %q, want abcde and XY (7 bytes between them)", got, gotErr)
	}
}

// TestDrainIsBounded: a writer that keeps the pipe open (a background child
// of the exec'd process) must not hold the drain past its timeout.
func TestDrainIsBounded(t *testing.T) {
	var out, errOut bytes.Buffer
	p, err := newOutputPipes(&out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	held, err := dupFile(p.outW)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.WriteString("partial"); err != nil {
		t.Fatal(err)
	}
	p.closeWriters()
	start := time.Now()
	p.drain(200 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("drain took %v with a writer still open", d)
	}
	if out.String() != "partial" {
		t.Errorf("drained %q, want partial", out.String())
	}
}

func dupFile(f *os.File) (*os.File, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup *os.File
	var dupErr error
	err = raw.Control(func(fd uintptr) {
		var nfd int
		nfd, dupErr = unix.Dup(int(fd))
		dup = os.NewFile(uintptr(nfd), "dup")
	})
	return dup, errors.Join(err, dupErr)
}

func TestExecProcessInheritsTheContainersProcess(t *testing.T) {
	dir := t.TempDir()
	spec := specs.Spec{Process: &specs.Process{
		Args: []string{"sleep", "1000"}, Env: []string{"A=b"}, Cwd: "/work",
		User: specs.User{UID: 1000, GID: 1000}, Terminal: true,
	}}
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &Container{ID: "c1", Bundle: dir}
	raw, err := execProcess(rec, []string{"ls", "-l"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var p specs.Process
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Args) != 2 || p.Args[0] != "ls" || p.Terminal || p.Cwd != "/work" || p.User.UID != 1000 || len(p.Env) != 1 {
		t.Errorf("exec process = %+v; want ls -l with the container's env, cwd and user, no terminal", p)
	}
	if _, err := execProcess(rec, nil, false); err == nil {
		t.Error("execProcess accepted an empty command")
	}
}
