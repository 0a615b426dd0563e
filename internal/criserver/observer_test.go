package criserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/berth-dev/berth/internal/errdefs"
)

type observation struct {
	method string
	code   codes.Code
	d      time.Duration
}

type recordingObserver struct{ got []observation }

func (r *recordingObserver) Observe(method string, code codes.Code, d time.Duration) {
	r.got = append(r.got, observation{method, code, d})
}

func TestInterceptorObservesEachCallWithItsCode(t *testing.T) {
	obs := &recordingObserver{}
	s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}, RPCs: obs})
	info := &grpc.UnaryServerInfo{FullMethod: "/runtime.v1.RuntimeService/ContainerStatus"}
	call := func(h grpc.UnaryHandler) { _, _ = s.UnaryInterceptor(context.Background(), nil, info, h) }

	call(func(context.Context, any) (any, error) { return "ok", nil }) // not ready yet
	s.SetReady()
	call(func(context.Context, any) (any, error) { time.Sleep(5 * time.Millisecond); return "ok", nil })
	call(func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("container %q: %w", "c1", errdefs.ErrNotFound)
	})
	call(func(context.Context, any) (any, error) { panic("boom") })

	want := []codes.Code{codes.Unavailable, codes.OK, codes.NotFound, codes.Internal}
	if len(obs.got) != len(want) {
		t.Fatalf("observed %d calls, want %d: %+v", len(obs.got), len(want), obs.got)
	}
	for i, o := range obs.got {
		if o.code != want[i] || o.method != info.FullMethod {
			t.Errorf("call %d observed %s %s, want %s %s", i, o.method, o.code, info.FullMethod, want[i])
		}
	}
	if obs.got[1].d < 5*time.Millisecond {
		t.Errorf("observed %v for a call that took at least 5ms", obs.got[1].d)
	}
}
