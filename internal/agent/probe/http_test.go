package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, portOf(t, srv.Listener.Addr().String())
}

func TestHTTPProbeStatusCodes(t *testing.T) {
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var code int
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/"), "%d", &code); err != nil {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "answered %d", code)
	})
	for _, tc := range []struct {
		code int
		want Result
	}{{200, Success}, {204, Success}, {299, Success}, {400, Failure}, {404, Failure}, {500, Failure}, {503, Failure}} {
		got, msg := Run(context.Background(), httpProbeSpec(port, fmt.Sprintf("/%d", tc.code)), podTarget(&v1.Container{}), nil)
		if got != tc.want {
			t.Errorf("status %d: got %v (%q), want %v", tc.code, got, msg, tc.want)
		}
		if tc.want == Success && msg != fmt.Sprintf("answered %d", tc.code) && tc.code != 204 {
			t.Errorf("status %d: message %q, want the body", tc.code, msg)
		}
		if tc.want == Failure && (!strings.Contains(msg, fmt.Sprint(tc.code)) || strings.Contains(msg, "answered")) {
			t.Errorf("status %d: message %q should name the code and leave the body out", tc.code, msg)
		}
	}
}

func TestHTTPProbeFollowsSameHostRedirects(t *testing.T) {
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/to-broken":
			http.Redirect(w, r, "/broken", http.StatusMovedPermanently)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/ok":
			fmt.Fprint(w, "fine")
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	target := podTarget(&v1.Container{})
	if got, msg := Run(context.Background(), httpProbeSpec(port, "/to-ok"), target, nil); got != Success || msg != "fine" {
		t.Errorf("redirect to a healthy path: %v %q", got, msg)
	}
	if got, msg := Run(context.Background(), httpProbeSpec(port, "/to-broken"), target, nil); got != Failure {
		t.Errorf("redirect to a failing path: %v %q, want Failure (redirect followed)", got, msg)
	}
	if got, msg := Run(context.Background(), httpProbeSpec(port, "/loop"), target, nil); got != Failure || !strings.Contains(msg, "redirects") {
		t.Errorf("redirect loop: %v %q", got, msg)
	}
}

func TestHTTPProbeStopsAtRedirectToAnotherHost(t *testing.T) {
	var otherHits atomic.Int32
	_, otherPort := serve(t, func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	})
	// "localhost" is another host name than 127.0.0.1 yet still loopback, so
	// even a wrongly followed redirect would stay on this machine.
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", fmt.Sprintf("http://localhost:%d/elsewhere", otherPort))
		w.WriteHeader(http.StatusFound)
		fmt.Fprint(w, "moved")
	})
	o := runProbe(context.Background(), httpProbeSpec(port, "/"), podTarget(&v1.Container{}), nil, time.Second)
	if o.result != Success || !o.warning || !strings.Contains(o.message, "moved") {
		t.Errorf("got %+v, want a Success with a warning carrying the body", o)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other host got %d requests, want none", n)
	}
}

func TestHTTPProbeHeaders(t *testing.T) {
	got := make(chan *http.Request, 2)
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Clone(context.Background()) })

	plain := httpProbeSpec(port, "/healthz?full=1")
	if res, msg := Run(context.Background(), plain, podTarget(&v1.Container{}), nil); res != Success {
		t.Fatalf("plain probe: %v %q", res, msg)
	}
	r := <-got
	if ua := r.Header.Get("User-Agent"); ua != "kube-probe/"+kubeVersion {
		t.Errorf("User-Agent %q", ua)
	}
	if a := r.Header.Get("Accept"); a != "*/*" {
		t.Errorf("Accept %q", a)
	}
	if r.URL.Path != "/healthz" || r.URL.RawQuery != "full=1" {
		t.Errorf("request for %s?%s", r.URL.Path, r.URL.RawQuery)
	}

	custom := httpProbeSpec(port, "/")
	custom.HTTPGet.HTTPHeaders = []v1.HTTPHeader{
		{Name: "X-Custom", Value: "a"}, {Name: "x-custom", Value: "b"},
		{Name: "user-agent", Value: "mine"}, {Name: "Accept", Value: ""}, {Name: "Host", Value: "app.example.test"},
	}
	if res, msg := Run(context.Background(), custom, podTarget(&v1.Container{}), nil); res != Success {
		t.Fatalf("custom probe: %v %q", res, msg)
	}
	r = <-got
	if v := r.Header.Values("X-Custom"); len(v) != 2 || v[0] != "a" || v[1] != "b" {
		t.Errorf("X-Custom %q", v)
	}
	if ua := r.Header.Get("User-Agent"); ua != "mine" {
		t.Errorf("User-Agent %q, want the handler's", ua)
	}
	if _, set := r.Header["Accept"]; set {
		t.Errorf("Accept %q, want it removed by the empty override", r.Header.Get("Accept"))
	}
	if r.Host != "app.example.test" {
		t.Errorf("Host %q", r.Host)
	}
}

func TestHTTPProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	o := runProbe(context.Background(), httpProbeSpec(port, "/slow"), podTarget(&v1.Container{}), nil, 20*time.Millisecond)
	if got, msg := o.result, o.message; got != Failure || !strings.Contains(msg, "within 20ms") {
		t.Errorf("got %v %q, want a Failure naming the timeout of one unit (20ms)", got, msg)
	}
}

func TestHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls ok") }))
	t.Cleanup(srv.Close)
	p := httpProbeSpec(portOf(t, srv.Listener.Addr().String()), "/")
	p.HTTPGet.Scheme = v1.URISchemeHTTPS
	if got, msg := Run(context.Background(), p, podTarget(&v1.Container{}), nil); got != Success || msg != "tls ok" {
		t.Errorf("got %v %q", got, msg)
	}
}

func TestHTTPProbeKeepsTenKiBOfBody(t *testing.T) {
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("x", 3*maxOutput)) })
	if got, msg := Run(context.Background(), httpProbeSpec(port, "/"), podTarget(&v1.Container{}), nil); got != Success || len(msg) != maxOutput {
		t.Errorf("got %v with %d bytes of body, want Success with %d", got, len(msg), maxOutput)
	}
}

func TestNamedPorts(t *testing.T) {
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "other", ContainerPort: 1}, {Name: "web", ContainerPort: int32(port)}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		want Result
		msg  string
	}{
		{intstr.FromString("web"), Success, ""},
		{intstr.FromString(fmt.Sprint(port)), Success, ""}, // a number written as a string
		{intstr.FromString("nope"), Unknown, "no container port"},
		{intstr.FromInt32(0), Unknown, "invalid port"},
		{intstr.FromInt32(70000), Unknown, "invalid port"},
	} {
		p := httpProbeSpec(0, "/")
		p.HTTPGet.Port = tc.port
		got, msg := Run(context.Background(), p, podTarget(c), nil)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("port %v: got %v %q, want %v containing %q", tc.port.String(), got, msg, tc.want, tc.msg)
		}
	}
}

func TestProbeAddress(t *testing.T) {
	_, port := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	p := httpProbeSpec(port, "/")
	if got, msg := Run(context.Background(), p, Target{Container: &v1.Container{}}, nil); got != Unknown || !strings.Contains(msg, "no IP") {
		t.Errorf("no pod IP: %v %q", got, msg)
	}
	if got, msg := Run(context.Background(), p, Target{HostNetwork: true, Container: &v1.Container{}}, nil); got != Success {
		t.Errorf("host network without a pod IP: %v %q, want it probed on loopback", got, msg)
	}
	p.HTTPGet.Host = "127.0.0.1"
	if got, msg := Run(context.Background(), p, Target{PodIP: "::1", Container: &v1.Container{}}, nil); got != Success {
		t.Errorf("handler host: %v %q, want the handler's host used over the pod IP", got, msg)
	}
}
