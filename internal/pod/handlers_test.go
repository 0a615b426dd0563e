package pod

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// newHandlersService is a fake Service with a second runtime handler,
// "runc-system", whose runc is other (a fake world of its own).
func newHandlersService(t *testing.T) (s *Service, f, other *fakeWorld) {
	t.Helper()
	f, other = newFakeWorld(), newFakeWorld()
	s = newFakeService(t, t.TempDir(), t.TempDir(), f)
	s.cfg.Runtimes = map[string]Runtime{"runc-system": {RuncPath: "/usr/sbin/runc", RuncRoot: "/run/test/runc-system"}}
	s.runtimes = map[string]containerRuntime{"runc-system": other}
	s.cfg.Images = oneImage{}
	return s, f, other
}

// TestHandlerPicksTheRuncOfEverySandboxAndContainerCall: a sandbox of the
// second handler gets a monitor running that handler's runc on its root,
// and every runc call on its containers (stop's kill, remove's delete) goes
// to that runc; the default handler's sandbox keeps the default's.
func TestHandlerPicksTheRuncOfEverySandboxAndContainerCall(t *testing.T) {
	s, f, other := newHandlersService(t)
	ctx := context.Background()
	for _, handler := range []string{"runc-system", ""} {
		f.calls, other.calls, f.launches = nil, nil, nil
		sbID, err := s.RunSandbox(ctx, goodSandboxConfig(), handler)
		if err != nil {
			t.Fatal(err)
		}
		wantRunc, wantRoot := s.cfg.RuncPath, s.cfg.RuncRoot
		if handler != "" {
			wantRunc, wantRoot = "/usr/sbin/runc", "/run/test/runc-system"
		}
		if len(f.launches) != 1 || f.launches[0].RuncPath != wantRunc || f.launches[0].RuncRoot != wantRoot {
			t.Errorf("%q: monitor launched with %+v, want runc %s root %s", handler, f.launches, wantRunc, wantRoot)
		}
		id, err := s.CreateContainer(ctx, sbID, appConfig(), goodSandboxConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got := s.containers[id].snapshot().RuntimeHandler; got != handler {
			t.Errorf("container record's handler %q, want its sandbox's %q", got, handler)
		}
		writeExit(t, s, id, 0, time.Now()) // the container ended: remove deletes it without a wait
		if err := s.RemoveSandbox(ctx, sbID); err != nil {
			t.Fatal(err)
		}
		used, unused := other, f
		if handler == "" {
			used, unused = f, other
		}
		if !slices.Contains(used.log(false), "delete "+short(id)) {
			t.Errorf("%q: runc delete of the container not sent to its handler's runc: %v", handler, used.log(false))
		}
		for _, c := range unused.log(false) {
			if c == "delete "+short(id) || c == "kill "+short(id) {
				t.Errorf("%q: the other handler's runc got %q", handler, c)
			}
		}
	}
}

func TestUnknownHandlerNamesTheKnownOnes(t *testing.T) {
	s, _, _ := newHandlersService(t)
	_, err := s.RunSandbox(context.Background(), goodSandboxConfig(), "kata")
	want := `runtime_handler: unknown handler "kata" (berth serves "", "runc", "runc-system")`
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("RunSandbox(kata) = %v, want InvalidArgument %q", err, want)
	}
	if got := s.Handlers(); !slices.Equal(got, []string{"", "runc", "runc-system"}) {
		t.Errorf("Handlers = %q", got)
	}
}

// TestAHandlerNoLongerConfiguredFailsItsCallsAndKeepsTheRecords: a
// container whose handler left the configuration is not taken for gone
// because another runc does not know it: stop fails with
// FailedPrecondition and the container stays running.
func TestAHandlerNoLongerConfiguredFailsItsCallsAndKeepsTheRecords(t *testing.T) {
	s, _, other := newHandlersService(t)
	ctx := context.Background()
	sbID, err := s.RunSandbox(ctx, goodSandboxConfig(), "runc-system")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateContainer(ctx, sbID, appConfig(), goodSandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	delete(s.cfg.Runtimes, "runc-system")
	delete(s.runtimes, "runc-system")
	other.calls = nil
	if err := s.StopContainer(ctx, id, 0); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("StopContainer under a handler gone = %v, want FailedPrecondition", err)
	}
	if st := s.containers[id].snapshot().State; st != ContainerRunning {
		t.Errorf("container %s after the failed stop, want running", st)
	}
	if len(other.calls) != 0 {
		t.Errorf("the removed handler's runc was called: %v", other.calls)
	}
}
