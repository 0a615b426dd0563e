package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func testDaemonSetObject(now time.Time) appsv1.DaemonSet {
	return appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logger", Namespace: "default", Generation: 2, CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second))},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "logger"}},
			Template:       v1.PodTemplateSpec{Spec: v1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1},
	}
}

func TestDaemonSetTableAndDescribe(t *testing.T) {
	now := time.Unix(10000, 0)
	list := agentapi.WorkloadList{DaemonSets: []appsv1.DaemonSet{testDaemonSetObject(now)}}
	var out bytes.Buffer
	if err := writeWorkloadTable(&out, list, agentapi.ResourceDaemonSet, false, false, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE" ||
		strings.Join(strings.Fields(lines[1]), " ") != "logger 1 1 1 1 1 disk=ssd 90s" {
		t.Fatalf("get ds:\n%s", out.String())
	}
	out.Reset()
	pod := v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning}}
	if err := describeWorkload(&out, agentapi.WorkloadDetail{DaemonSet: &list.DaemonSets[0], Pods: []v1.Pod{pod}}, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Node-Selector:", "disk=ssd", "Desired Number of Nodes Scheduled:", "Number of Nodes Misscheduled:", "1 Running / 0 Waiting", "Pod Template:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe ds lacks %q:\n%s", want, out.String())
		}
	}
	if got, ok := workloadResource("ds"); !ok || got != agentapi.ResourceDaemonSet {
		t.Errorf("workloadResource(ds) = %q", got)
	}
	if r, name, err := splitTypeName("daemonset.apps/logger"); err != nil || r != agentapi.ResourceDaemonSet || name != "logger" {
		t.Errorf("splitTypeName: %q %q %v", r, name, err)
	}
}

func TestDaemonSetRolloutMessages(t *testing.T) {
	ds := testDaemonSetObject(time.Now())
	for _, s := range []struct {
		status appsv1.DaemonSetStatus
		want   string
		done   bool
	}{
		{appsv1.DaemonSetStatus{ObservedGeneration: 1}, "Waiting for daemon set spec update to be observed...", false},
		{appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 1}, `Waiting for daemon set "logger" rollout to finish: 0 out of 1 new pods have been updated...`, false},
		{appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, `Waiting for daemon set "logger" rollout to finish: 0 of 1 updated pods are available...`, false},
		{appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1}, `daemon set "logger" successfully rolled out`, true},
		{appsv1.DaemonSetStatus{ObservedGeneration: 2}, `daemon set "logger" successfully rolled out`, true},
	} {
		ds.Status = s.status
		msg, done, err := daemonSetRolloutMessage(&ds)
		if err != nil || strings.TrimSpace(msg) != s.want || done != s.done {
			t.Errorf("status %+v: %q %v %v; want %q %v", s.status, msg, done, err, s.want, s.done)
		}
	}
	ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	if _, _, err := daemonSetRolloutMessage(&ds); err == nil {
		t.Error("rollout status of an OnDelete DaemonSet")
	}
}
