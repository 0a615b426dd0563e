package probe

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

func TestExecProbeExitCodes(t *testing.T) {
	ex := execFunc(func(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		if id != "c1" || timeout != time.Second {
			t.Errorf("ExecSync(%q, %q, %v), want container c1 and a 1s timeout", id, cmd, timeout)
		}
		code := int32(0)
		if cmd[0] == "fail" {
			code = 7
		}
		return []byte("out "), []byte("err"), code, nil
	})
	if got, msg := Run(context.Background(), execProbeSpec("ok"), podTarget(&v1.Container{}), ex); got != Success || msg != "out err" {
		t.Errorf("exit 0: %v %q", got, msg)
	}
	if got, msg := Run(context.Background(), execProbeSpec("fail"), podTarget(&v1.Container{}), ex); got != Failure || msg != "out err" {
		t.Errorf("exit 7: %v %q", got, msg)
	}
}

func TestExecProbeOutputIsBounded(t *testing.T) {
	big := []byte(strings.Repeat("o", maxOutput))
	_, msg := Run(context.Background(), execProbeSpec("x"), podTarget(&v1.Container{}), execFunc(
		func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
			return big, []byte("stderr"), 0, nil
		}))
	if len(msg) != maxOutput {
		t.Errorf("kept %d bytes of output, want %d", len(msg), maxOutput)
	}
}

func TestExecProbeTimeoutReportedByRuntime(t *testing.T) {
	// The runtime stops the command at the timeout it was given and says so.
	ex := execFunc(func(ctx context.Context, _ string, _ []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		select {
		case <-time.After(timeout):
		case <-ctx.Done():
		}
		return nil, nil, 0, status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")
	})
	o := runProbe(context.Background(), execProbeSpec("sleep", "10"), podTarget(&v1.Container{}), ex, 20*time.Millisecond)
	if got, msg := o.result, o.message; got != Failure || !strings.Contains(msg, "timed out") || !strings.Contains(msg, "sleep 10") {
		t.Errorf("got %v %q, want a Failure saying the command timed out", got, msg)
	}
}

func TestExecProbeTimeoutWhenRuntimeHangs(t *testing.T) {
	// A runtime that ignores the timeout is abandoned one unit later.
	ex := execFunc(func(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, int32, error) {
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	})
	o := runProbe(context.Background(), execProbeSpec("hang"), podTarget(&v1.Container{}), ex, 20*time.Millisecond)
	if o.result != Failure || !strings.Contains(o.message, "timed out") {
		t.Errorf("got %+v", o)
	}
}

func TestExecProbeError(t *testing.T) {
	ex := execFunc(func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
		return nil, nil, 0, status.Error(codes.NotFound, "container c1 not found")
	})
	if got, msg := Run(context.Background(), execProbeSpec("x"), podTarget(&v1.Container{}), ex); got != Unknown || !strings.Contains(msg, "not found") {
		t.Errorf("got %v %q, want Unknown with the runtime's error", got, msg)
	}
	if got, _ := Run(context.Background(), execProbeSpec("x"), podTarget(&v1.Container{}), nil); got != Unknown {
		t.Errorf("without an Execer: %v, want Unknown", got)
	}
}

func TestExecProbeCancelledByCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ex := execFunc(func(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, int32, error) {
		cancel()
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	})
	if got, msg := Run(ctx, execProbeSpec("x"), podTarget(&v1.Container{}), ex); got != Unknown {
		t.Errorf("got %v %q, want Unknown: a cancelled probe has no verdict", got, msg)
	}
}

func TestExecProbeExpandsContainerEnv(t *testing.T) {
	var ran []string
	ex := execFunc(func(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
		ran = cmd
		return nil, nil, 0, nil
	})
	c := &v1.Container{Env: []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}},
	}}
	Run(context.Background(), execProbeSpec("check", "$(PORT)", "[$(SECRET)]", "$(MISSING)", "$$(PORT)"), podTarget(c), ex)
	if want := []string{"check", "8080", "[]", "$(MISSING)", "$(PORT)"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}

	target := podTarget(c)
	target.Env = func(name string) (string, bool) { return "resolved-" + name, name == "SECRET" }
	Run(context.Background(), execProbeSpec("$(SECRET)", "$(PORT)"), target, ex)
	if want := []string{"resolved-SECRET", "$(PORT)"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("with Target.Env, ran %q, want %q", ran, want)
	}
}

func TestProbeWithoutHandler(t *testing.T) {
	if got, _ := Run(context.Background(), &v1.Probe{}, podTarget(&v1.Container{}), nil); got != Unknown {
		t.Errorf("empty probe: %v", got)
	}
	if got, _ := Run(context.Background(), nil, podTarget(&v1.Container{}), nil); got != Unknown {
		t.Errorf("nil probe: %v", got)
	}
}
