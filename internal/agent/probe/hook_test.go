package probe

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func execHookSpec(cmd ...string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
}

func httpHookSpec(port int, path string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}}
}

func TestExecHook(t *testing.T) {
	var ran []string
	var gotTimeout time.Duration = -1
	ex := execFunc(func(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		ran, gotTimeout = cmd, timeout
		switch cmd[0] {
		case "fail":
			return []byte("some "), []byte("trouble"), 3, nil
		case "broken":
			return nil, nil, 0, errors.New("runtime unavailable")
		}
		return nil, nil, 0, nil
	})
	c := &v1.Container{Env: []v1.EnvVar{{Name: "A", Value: "1"}}}
	if err := RunHook(context.Background(), execHookSpec("ok", "$(A)"), podTarget(c), ex); err != nil {
		t.Errorf("exit 0: %v", err)
	}
	if want := []string{"ok", "$(A)"}; !reflect.DeepEqual(ran, want) || gotTimeout != 0 {
		t.Errorf("ran %q with timeout %v, want %q unexpanded and no timeout", ran, gotTimeout, want)
	}
	err := RunHook(context.Background(), execHookSpec("fail"), podTarget(c), ex)
	if err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "some trouble") {
		t.Errorf("exit 3: %v, want an error with the code and the output", err)
	}
	if err := RunHook(context.Background(), execHookSpec("broken"), podTarget(c), ex); err == nil || !strings.Contains(err.Error(), "runtime unavailable") {
		t.Errorf("exec error: %v", err)
	}
}

func TestHTTPHook(t *testing.T) {
	requests := make(chan *http.Request, 4)
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {
		requests <- r.Clone(context.Background())
		if r.URL.Path == "/broken" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	h := httpHookSpec(port, "/shutdown")
	h.HTTPGet.HTTPHeaders = []v1.HTTPHeader{{Name: "X-Reason", Value: "stop"}}
	if err := RunHook(context.Background(), h, podTarget(&v1.Container{}), nil); err != nil {
		t.Fatalf("hook: %v", err)
	}
	r := <-requests
	if r.URL.Path != "/shutdown" || r.Header.Get("X-Reason") != "stop" || r.Header.Get("User-Agent") != "kube-lifecycle/"+kubeVersion {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	// Like the kubelet, any HTTP response will do.
	if err := RunHook(context.Background(), httpHookSpec(port, "/broken"), podTarget(&v1.Container{}), nil); err != nil {
		t.Errorf("hook answered 500: %v, want no error", err)
	}
	if err := RunHook(context.Background(), httpHookSpec(closedPort(t), "/"), podTarget(&v1.Container{}), nil); err == nil {
		t.Error("hook to a closed port succeeded")
	}
}

func TestHTTPSHookFallsBackToHTTP(t *testing.T) {
	requests := make(chan *http.Request, 2)
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) { requests <- r.Clone(context.Background()) })
	h := httpHookSpec(port, "/hook")
	h.HTTPGet.Scheme = v1.URISchemeHTTPS
	h.HTTPGet.HTTPHeaders = []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer secret"}}
	if err := RunHook(context.Background(), h, podTarget(&v1.Container{}), nil); err != nil {
		t.Fatalf("hook: %v", err)
	}
	var got *http.Request
	for len(requests) > 0 {
		got = <-requests // the TLS attempt never reaches the handler
	}
	if got == nil || got.URL.Path != "/hook" {
		t.Fatalf("the plain HTTP retry did not arrive: %v", got)
	}
	if a := got.Header.Get("Authorization"); a != "" {
		t.Errorf("the plain HTTP retry carried Authorization %q", a)
	}
}

func TestSleepHook(t *testing.T) {
	start := time.Now()
	if err := sleepHook(context.Background(), 2, 10*time.Millisecond); err != nil {
		t.Errorf("sleep: %v", err)
	}
	if slept := time.Since(start); slept < 20*time.Millisecond {
		t.Errorf("slept %v, want two units of 10ms", slept)
	}
	if err := RunHook(context.Background(), &v1.LifecycleHandler{Sleep: &v1.SleepAction{}}, podTarget(&v1.Container{}), nil); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
}

func TestSleepHookCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunHook(ctx, &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}}, podTarget(&v1.Container{}), nil)
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled sleep: %v, want an error wrapping context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sleep hook ignored the cancellation")
	}
}

func TestUnsupportedHooks(t *testing.T) {
	tcp := &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}
	if err := RunHook(context.Background(), tcp, podTarget(&v1.Container{}), nil); err == nil || !strings.Contains(err.Error(), "tcpSocket") {
		t.Errorf("tcpSocket hook: %v, want an error", err)
	}
	if err := RunHook(context.Background(), &v1.LifecycleHandler{}, podTarget(&v1.Container{}), nil); err == nil {
		t.Error("a hook without a handler succeeded")
	}
	if err := RunHook(context.Background(), nil, podTarget(&v1.Container{}), nil); err != nil {
		t.Errorf("no hook: %v", err)
	}
}
