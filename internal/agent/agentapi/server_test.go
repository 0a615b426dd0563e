package agentapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// stubService answers every call with err, and records the grace of the
// last Delete.
type stubService struct {
	err       error
	grace     *int64
	pulls     PullList
	namespace string // of the last Pulls
	notReady  error
}

func (s *stubService) Apply(context.Context, ApplyRequest) (ApplyResponse, error) {
	return ApplyResponse{Objects: []ApplyResult{{Kind: KindPod, Name: "p", Outcome: OutcomeCreated}}}, s.err
}

func (s *stubService) Unwatch(context.Context, string) (DeleteResponse, error) {
	return DeleteResponse{}, s.err
}

func (s *stubService) Delete(_ context.Context, _, _ string, grace *int64) (DeleteResponse, error) {
	s.grace = grace
	return DeleteResponse{}, s.err
}

func (s *stubService) UpdateEphemeralContainers(_ context.Context, _, name string, list []v1.EphemeralContainer) (v1.Pod, error) {
	pod := v1.Pod{}
	pod.Name = name
	pod.Spec.EphemeralContainers = list
	return pod, s.err
}

func (s *stubService) ListPods(string) v1.PodList { return v1.PodList{} }

func (s *stubService) Ready() error { return s.notReady }

func (s *stubService) Pulls(namespace string) PullList {
	s.namespace = namespace
	return s.pulls
}

func (s *stubService) ListEvents(namespace string) EventList {
	return EventList{Items: []PodEvent{{Namespace: namespace, Pod: "p", Event: Event{Type: EventWarning, Reason: "BackOff", Count: 2}}}}
}

func (s *stubService) ListWorkloads(string, string) (WorkloadList, error) {
	return WorkloadList{}, s.err
}

func (s *stubService) DescribeWorkload(string, string, string) (WorkloadDetail, error) {
	return WorkloadDetail{}, s.err
}

func (s *stubService) DeleteWorkload(_ context.Context, _, _, _ string, grace *int64) (DeleteResponse, error) {
	s.grace = grace
	return DeleteResponse{}, s.err
}

func (s *stubService) Scale(context.Context, string, string, string, int32) (ApplyResult, error) {
	return ApplyResult{}, s.err
}

func (s *stubService) Rollout(context.Context, string, string, string, RolloutRequest) (ApplyResult, error) {
	return ApplyResult{}, s.err
}

func (s *stubService) DescribePod(_, name string) (PodDetail, error) {
	return PodDetail{Events: []Event{{Type: EventNormal, Reason: "Started", Count: 1}}}, s.err
}

func (s *stubService) Node() NodeDetail {
	return NodeDetail{Node: v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue}}}}}
}

func serve(t *testing.T, svc PodService) *Client {
	t.Helper()
	socket := filepath.Join(t.TempDir(), SocketName)
	srv, err := ListenAPI(socket, svc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve() //nolint:errcheck // ends with Close
	t.Cleanup(srv.Close)
	info, err := os.Stat(socket)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, mode %v; want 0600", socket, err, info.Mode())
	}
	return NewClient(socket)
}

// Each error class the service returns comes back to the client as the
// same class, with the service's message.
func TestErrorClassesRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, class := range []error{errdefs.ErrInvalidArgument, errdefs.ErrNotFound, errdefs.ErrFailedPrecondition, errdefs.ErrUnavailable} {
		client := serve(t, &stubService{err: fmt.Errorf("pod default/p: %w", class)})
		_, err := client.DescribePod(ctx, "default", "p")
		if !errors.Is(err, class) || !strings.Contains(err.Error(), "pod default/p") {
			t.Errorf("service error %v came back as %v", class, err)
		}
		if IsUnreachable(err) {
			t.Errorf("an answer of the agent (%v) reads as unreachable", err)
		}
	}
	client := serve(t, &stubService{})
	detail, err := client.DescribePod(ctx, "default", "p")
	if err != nil || len(detail.Events) != 1 || detail.Events[0].Reason != "Started" {
		t.Errorf("describe: %+v, %v", detail, err)
	}
	events, err := client.ListEvents(ctx, "kube system")
	if err != nil || len(events.Items) != 1 || events.Items[0].Namespace != "kube system" || events.Items[0].Reason != "BackOff" || events.Items[0].Count != 2 {
		t.Errorf("list events: %+v, %v; want the namespace passed and the event back", events, err)
	}
}

func TestServerRefusesBadRequests(t *testing.T) {
	svc := &stubService{}
	client := serve(t, svc)
	req, _ := http.NewRequest(http.MethodPost, "http://agent"+pathApply, strings.NewReader(`{"surprise": 1}`))
	resp, err := client.http.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown request field: %v %v; want 400", err, resp)
	}
	if resp != nil {
		resp.Body.Close()
	}
	req, _ = http.NewRequest(http.MethodDelete, "http://agent"+podPath("default", "p")+"?grace=-1", nil)
	resp, err = client.http.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("negative grace: %v %v; want 400", err, resp)
	}
	if resp != nil {
		resp.Body.Close()
	}
	grace := int64(7)
	if _, err := client.Delete(context.Background(), "default", "p", &grace); err != nil || svc.grace == nil || *svc.grace != 7 {
		t.Errorf("delete with grace 7: %v, service saw %v", err, svc.grace)
	}
}

func TestClientWithoutAgentIsUnreachable(t *testing.T) {
	client := NewClient(filepath.Join(t.TempDir(), SocketName))
	if client.Reachable(context.Background()) {
		t.Error("a socket that does not exist is reachable")
	}
	if _, err := client.ListPods(context.Background(), ""); !IsUnreachable(err) {
		t.Errorf("list without an agent: %v; want unreachable", err)
	}
}

func TestNodeRoundTrips(t *testing.T) {
	client := serve(t, &stubService{})
	detail, err := client.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := detail.Node.Status.Conditions; len(c) != 1 || c[0].Type != v1.NodeDiskPressure || c[0].Status != v1.ConditionTrue {
		t.Errorf("node conditions: %+v", c)
	}
}

// A pull list comes back as the service made it, every field included;
// the namespace reaches the service; a recovering agent refuses.
func TestPullsRoundTrip(t *testing.T) {
	started := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	want := PullList{Items: []ImagePull{{
		Namespace: "default", Pod: "web", PodUID: "u1", Image: "127.0.0.1:5000/busybox:1", State: PullPulling,
		Detailed: true, LayersDone: 1, LayersTotal: 2, BytesDone: 1500, BytesTotal: 4000, Rate: 750.5,
		Layers:  []LayerPull{{Digest: "sha256:aa", State: "exists", Done: 10, Total: 10}, {Digest: "sha256:bb", State: "downloading", Done: 1500, Total: 4000, Started: started.Add(time.Second)}},
		Started: started,
	}, {
		Namespace: "default", Pod: "db", Image: "busybox", State: PullFailed, Size: 0,
		Started: started, Ended: started.Add(2 * time.Second), Error: "not found",
	}}}
	svc := &stubService{pulls: want}
	client := serve(t, svc)
	got, err := client.Pulls(context.Background(), "team a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pulls came back as\n%+v\nwant\n%+v", got, want)
	}
	if svc.namespace != "team a" {
		t.Errorf("service asked for namespace %q, want %q", svc.namespace, "team a")
	}
	svc.notReady = fmt.Errorf("the agent is starting: %w", errdefs.ErrUnavailable)
	if _, err := client.Pulls(context.Background(), ""); !errors.Is(err, errdefs.ErrUnavailable) || IsUnreachable(err) {
		t.Errorf("pulls of a recovering agent: %v; want its 503", err)
	}
}
