package procwatch

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestWaitReturnsWhenTheProcessEnds(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := Open(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Exited() {
		t.Fatal("Exited before the process ended")
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v while the process runs", err)
	case <-time.After(50 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	if err := <-done; err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if !p.Exited() {
		t.Error("Exited = false after Wait returned")
	}
	_ = cmd.Wait()
}

func TestCloseEndsWait(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	p, err := Open(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	time.Sleep(10 * time.Millisecond) // let Wait park; Close must end it either way
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
}

func TestOpenRefusesGoneAndBadPids(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cmd.Process.Pid); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Open of a reaped pid = %v, want ErrNotFound", err)
	}
	if _, err := Open(0); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Open(0) = %v, want ErrInvalidArgument", err)
	}
}
