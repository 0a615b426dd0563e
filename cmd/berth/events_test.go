package main

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func TestEventsCommand(t *testing.T) {
	now := time.Now()
	web, db := testPod("default", "web", "app"), testPod("kube", "db", "pg")
	web.Pod.UID, db.Pod.UID = "uid-web", "uid-db"
	web.Events = []agentapi.Event{
		{Type: agentapi.EventNormal, Reason: "Scheduled", Message: "Successfully assigned default/web", Count: 1, FirstTime: now.Add(-3 * time.Minute), LastTime: now.Add(-3 * time.Minute)},
		{Type: agentapi.EventWarning, Reason: "BackOff", Message: "Back-off restarting\nfailed container", Count: 4, FirstTime: now.Add(-2 * time.Minute), LastTime: now.Add(-5 * time.Second)},
	}
	db.Events = []agentapi.Event{{Type: agentapi.EventNormal, Reason: "Started", Message: "Started container pg", Count: 1, FirstTime: now.Add(-time.Minute), LastTime: now.Add(-time.Minute)}}
	flags := serveFakeAgent(t, &fakeAgent{details: []agentapi.PodDetail{web, db}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"events"}, `
LAST SEEN         TYPE      REASON      OBJECT    MESSAGE
3m                Normal    Scheduled   pod/web   Successfully assigned default/web
5s (x4 over 2m)   Warning   BackOff     pod/web   Back-off restarting failed container
`},
		{[]string{"events", "-A", "--types", "Normal", "--no-headers"}, `
default   3m    Normal   Scheduled   pod/web   Successfully assigned default/web
kube      60s   Normal   Started     pod/db    Started container pg
`},
		{[]string{"events", "-A", "--for", "pod/db"}, `
NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT   MESSAGE
kube        60s         Normal   Started   pod/db   Started container pg
`},
		{[]string{"events", "-n", "empty"}, "No events found in empty namespace.\n"},
		{[]string{"events", "-A", "--for", "pod/none"}, "No events found.\n"}, // kubectl's words
	} {
		out, err := runBerth(t, append(flags, tc.args...)...)
		if err != nil || out != strings.TrimPrefix(tc.want, "\n") {
			t.Errorf("berth %v: %v\n%s\nwant\n%s", tc.args, err, out, strings.TrimPrefix(tc.want, "\n"))
		}
	}
	if _, err := runBerth(t, append(flags, "events", "--types", "Bad")...); err == nil || !strings.Contains(err.Error(), "Normal or Warning") {
		t.Errorf("--types Bad: %v; want a refusal", err)
	}
}

// A watch prints an event again once it repeats, not before.
func TestEventsSeen(t *testing.T) {
	t0 := time.Now()
	ev := agentapi.PodEvent{Namespace: "default", Pod: "web", PodUID: "u1", Event: agentapi.Event{Type: agentapi.EventWarning, Reason: "BackOff", Count: 1, LastTime: t0}}
	other := ev
	other.PodUID = "u2" // the same name, a new pod
	seen := eventsSeen{}
	if got := seen.fresh([]agentapi.PodEvent{ev}); len(got) != 1 {
		t.Fatalf("first look: %d events; want 1", len(got))
	}
	if got := seen.fresh([]agentapi.PodEvent{ev}); len(got) != 0 {
		t.Errorf("same event again: %d fresh; want 0", len(got))
	}
	ev.Count, ev.LastTime = 2, t0.Add(time.Second)
	if got := seen.fresh([]agentapi.PodEvent{ev, other}); len(got) != 2 || got[0].Count != 2 {
		t.Errorf("repeat and a new pod's event: %+v; want both", got)
	}
}

// Events of workloads and of the node are listed with kubectl's OBJECT
// (kind/name), by `berth events` and `berth get events`; --for takes
// KIND/NAME.
func TestEventsOfOtherObjects(t *testing.T) {
	now := time.Now()
	at := func(ago time.Duration) agentapi.Event {
		return agentapi.Event{Type: agentapi.EventNormal, Count: 1, FirstTime: now.Add(-ago), LastTime: now.Add(-ago)}
	}
	scaled, ready := at(2*time.Minute), at(time.Minute)
	scaled.Reason, scaled.Message = "ScalingReplicaSet", "Scaled up replica set web-5d4f to 3"
	ready.Reason, ready.Message = "NodeReady", "Node vm status is now: NodeReady"
	flags := serveFakeAgent(t, &fakeAgent{objectEvents: []agentapi.PodEvent{
		{Namespace: "default", Kind: agentapi.KindDeployment, Pod: "web", Event: scaled},
		{Kind: "Node", Pod: "vm", Event: ready},
	}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "events", "-A"}, `
NAMESPACE   LAST SEEN   TYPE     REASON              OBJECT           MESSAGE
default     2m          Normal   ScalingReplicaSet   deployment/web   Scaled up replica set web-5d4f to 3
            60s         Normal   NodeReady           node/vm          Node vm status is now: NodeReady
`},
		{[]string{"events", "--for", "deployment/web"}, `
LAST SEEN   TYPE     REASON              OBJECT           MESSAGE
2m          Normal   ScalingReplicaSet   deployment/web   Scaled up replica set web-5d4f to 3
`},
		{[]string{"events", "-A", "--for", "web"}, "No events found.\n"}, // a bare name is a pod's
	} {
		out, err := runBerth(t, append(flags, tc.args...)...)
		if err != nil || out != strings.TrimPrefix(tc.want, "\n") {
			t.Errorf("berth %v: %v\n%s\nwant\n%s", tc.args, err, out, strings.TrimPrefix(tc.want, "\n"))
		}
	}
	if _, err := runBerth(t, append(flags, "get", "events", "-o", "json")...); err == nil {
		t.Errorf("get events -o json: no error; want a refusal (only the table)")
	}
}
