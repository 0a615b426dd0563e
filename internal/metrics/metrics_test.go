package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func assertContains(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l) {
			t.Errorf("exposition lacks %q", l)
		}
	}
}

func TestObservationsAreExposed(t *testing.T) {
	m := New()
	m.Observe("/runtime.v1.RuntimeService/RunPodSandbox", codes.OK, 30*time.Millisecond)
	m.Observe("/runtime.v1.RuntimeService/RunPodSandbox", codes.OK, 50*time.Millisecond)
	m.Observe("/runtime.v1.ImageService/PullImage", codes.NotFound, time.Second)
	m.ObservePhase("run_sandbox", "cni", 20*time.Millisecond)
	m.ObservePhase("create_container", "runc_create", 40*time.Millisecond)

	body := scrape(t, m.Handler())
	assertContains(t, body,
		`berth_cri_request_duration_seconds_count{code="OK",method="RunPodSandbox"} 2`,
		`berth_cri_request_duration_seconds_sum{code="OK",method="RunPodSandbox"} 0.08`,
		`berth_cri_request_duration_seconds_count{code="NotFound",method="PullImage"} 1`,
		// Buckets double from 0.5 ms: 30 ms falls in (0.016, 0.032], 50 ms in (0.032, 0.064].
		`berth_cri_request_duration_seconds_bucket{code="OK",method="RunPodSandbox",le="0.016"} 0`,
		`berth_cri_request_duration_seconds_bucket{code="OK",method="RunPodSandbox",le="0.032"} 1`,
		`berth_cri_request_duration_seconds_bucket{code="OK",method="RunPodSandbox",le="0.064"} 2`,
		`berth_start_phase_duration_seconds_count{op="run_sandbox",phase="cni"} 1`,
		`berth_start_phase_duration_seconds_count{op="create_container",phase="runc_create"} 1`,
		"go_goroutines ",
	)
}

func TestStatesAreCountedAtScrape(t *testing.T) {
	m := New()
	sandboxes := map[string]int{"ready": 2}
	m.TrackStates(func() map[string]int { return sandboxes },
		func() map[string]int { return map[string]int{"running": 3, "exited": 1} })
	assertContains(t, scrape(t, m.Handler()),
		`berth_sandboxes{state="ready"} 2`,
		`berth_containers{state="running"} 3`,
		`berth_containers{state="exited"} 1`)
	sandboxes = map[string]int{"ready": 1, "notready": 1}
	body := scrape(t, m.Handler())
	assertContains(t, body, `berth_sandboxes{state="ready"} 1`, `berth_sandboxes{state="notready"} 1`)
}

func TestQuarantinedRecordsAreCountedAtScrape(t *testing.T) {
	m := New()
	counts := map[string]int{"sandbox": 0, "container": 0}
	m.TrackQuarantined(func() map[string]int { return counts })
	assertContains(t, scrape(t, m.Handler()),
		`berth_quarantined_records{kind="sandbox"} 0`, `berth_quarantined_records{kind="container"} 0`)
	counts = map[string]int{"sandbox": 1, "container": 2}
	assertContains(t, scrape(t, m.Handler()),
		`berth_quarantined_records{kind="sandbox"} 1`, `berth_quarantined_records{kind="container"} 2`)
}

func TestFsyncsAreReadAtScrape(t *testing.T) {
	m := New()
	var n uint64 = 7
	m.TrackFsyncs(func() uint64 { return n })
	assertContains(t, scrape(t, m.Handler()), `berth_store_fsyncs_total 7`)
	n = 12
	assertContains(t, scrape(t, m.Handler()), `berth_store_fsyncs_total 12`)
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *Metrics
	m.Observe("/x/Y", codes.OK, time.Millisecond)
	m.ObservePhase("run_sandbox", "cni", time.Millisecond)
	m.TrackStates(nil, nil)
	m.TrackQuarantined(nil)
	m.TrackFsyncs(nil)
}

func TestServerServesMetricsOnly(t *testing.T) {
	m := New()
	m.ObservePhase("start_container", "runc_start", time.Millisecond)
	srv, err := Listen("127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	base := "http://" + srv.Addr().String()
	body := get(t, base+"/metrics", http.StatusOK)
	assertContains(t, body, `berth_start_phase_duration_seconds_count{op="start_container",phase="runc_start"} 1`)
	get(t, base+"/", http.StatusNotFound)
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve after close: %v", err)
	}
}

func TestCloseWithoutServeReleasesTheAddress(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", New())
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Listen(addr, New())
	if err != nil {
		t.Fatalf("address still held after Close: %v", err)
	}
	again.Close()
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, want)
	}
	return string(b)
}
