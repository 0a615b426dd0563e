package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// apply prints kubectl's lines, a skipped object's with a Warning on
// stderr naming it by kubectl's resource name and saying why, and any
// other object's message as a Warning too.
func TestPrintApplyResult(t *testing.T) {
	var out, errOut strings.Builder
	for _, r := range []agentapi.ApplyResult{
		{APIVersion: "v1", Kind: "Namespace", Name: "shop", Outcome: agentapi.OutcomeSkipped, Message: "namespaces exist implicitly"},
		{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: "shop", Name: "web", Outcome: agentapi.OutcomeSkipped, Message: "no ingress controller"},
		{Kind: agentapi.KindDeployment, Namespace: "shop", Name: "web", Outcome: agentapi.OutcomeCreated},
		{Kind: agentapi.KindService, Namespace: "shop", Name: "web", Outcome: agentapi.OutcomeUnchanged},
		{Kind: agentapi.KindPod, Namespace: "shop", Name: "b", Outcome: agentapi.OutcomeCreated, Message: `metadata.uid "x" ignored`},
	} {
		printApplyResult(&out, &errOut, r)
	}
	wantOut := "namespace/shop skipped\ningress.networking.k8s.io/web skipped\ndeployment.apps/web created\nservice/web unchanged\npod/b created\n"
	wantErr := "Warning: namespace/shop skipped: namespaces exist implicitly\nWarning: ingress.networking.k8s.io/web skipped: no ingress controller\n" +
		"Warning: pod/b: metadata.uid \"x\" ignored\n"
	if out.String() != wantOut || errOut.String() != wantErr {
		t.Errorf("stdout\n%s\nstderr\n%s\nwant\n%s\nand\n%s", out.String(), errOut.String(), wantOut, wantErr)
	}
}

// delete -f skips again what apply skipped, and says so.
func TestDeleteSaysSkipped(t *testing.T) {
	b, err := manifest.Load("../../internal/agent/manifest/testdata/realapp.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if err := finishDelete(context.Background(), nil, skippedTargets(b), true, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	wantOut := `namespace "shop" skipped
serviceaccount "web" skipped
ingress.networking.k8s.io "web" skipped
poddisruptionbudget.policy "web" skipped
horizontalpodautoscaler.autoscaling "web" skipped
`
	if out.String() != wantOut {
		t.Errorf("stdout\n%s\nwant\n%s", out.String(), wantOut)
	}
	if n := strings.Count(errOut.String(), "Warning: "); n != 5 || !strings.Contains(errOut.String(), `Warning: ingress.networking.k8s.io "web" skipped: no ingress controller`) {
		t.Errorf("stderr\n%s\nwant 5 warnings with the reasons", errOut.String())
	}
}

// Skipped kinds in a directory of pods do not make it a directory of
// workloads: it is still watched.
func TestLoadRequestsDirectoryOfPodsWithSkippedKinds(t *testing.T) {
	pods := t.TempDir()
	writeTestFile(t, filepath.Join(pods, "pod.yaml"), dirTestPod)
	writeTestFile(t, filepath.Join(pods, "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
	reqs, err := loadRequests([]string{pods}, nil, io.Discard)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != pods {
		t.Fatalf("%+v %v; want one watch request", reqs, err)
	}
	// A file of skipped objects alone is sent: the agent reports them.
	reqs, err = loadRequests([]string{filepath.Join(pods, "ns.yaml")}, nil, io.Discard)
	if err != nil || len(reqs) != 1 || reqs[0].Bundle == nil || len(reqs[0].Bundle.Skipped) != 1 {
		t.Fatalf("%+v %v; want one bundle with the Namespace", reqs, err)
	}
}
