package agentapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// stubService answers every call with err, and records the grace of the
// last Delete.
type stubService struct {
	err   error
	grace *int64
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

func (s *stubService) Ready() error { return nil }

func (s *stubService) ListEvents(namespace string) EventList {
	return EventList{Items: []PodEvent{{Namespace: namespace, Pod: "p", Event: Event{Type: EventWarning, Reason: "BackOff", Count: 2}}}}
}

func (s *stubService) DescribePod(_, name string) (PodDetail, error) {
	return PodDetail{Events: []Event{{Type: EventNormal, Reason: "Started", Count: 1}}}, s.err
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
