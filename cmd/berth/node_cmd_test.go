package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func testNode(now time.Time) agentapi.NodeDetail {
	at := metav1.NewTime(now.Add(-time.Minute))
	return agentapi.NodeDetail{
		Node: v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)), Labels: map[string]string{"kubernetes.io/os": "linux"}},
			Status: v1.NodeStatus{
				Conditions: []v1.NodeCondition{
					{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure", LastHeartbeatTime: at, LastTransitionTime: at},
					{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: at, LastTransitionTime: at},
				},
				Addresses:   []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}},
				Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")},
				Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")},
				NodeInfo:    v1.NodeSystemInfo{KubeletVersion: "0.9.0", KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.7"},
			},
		},
		Events: []agentapi.Event{{Type: agentapi.EventNormal, Reason: "NodeHasDiskPressure", Message: "Node node-1 status is now: NodeHasDiskPressure", Count: 1, FirstTime: now, LastTime: now}},
	}
}

func TestGetNodeShowsKubectlColumns(t *testing.T) {
	now := time.Now()
	var out bytes.Buffer
	n := testNode(now)
	if err := writeNode(&out, &n.Node, "", false, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATUS ROLES AGE VERSION" ||
		strings.Join(strings.Fields(lines[1]), " ") != "node-1 Ready <none> 120m 0.9.0" {
		t.Errorf("get node:\n%s", out.String())
	}
	out.Reset()
	if err := writeNode(&out, &n.Node, "wide", false, now); err != nil || !strings.Contains(out.String(), "10.0.0.5") || !strings.Contains(out.String(), "containerd://1.7") {
		t.Errorf("get node -o wide: %v\n%s", err, out.String())
	}
}

func TestDescribeNodeShowsConditionsResourcesAndPods(t *testing.T) {
	now := time.Now()
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", CreationTimestamp: metav1.NewTime(now)},
		Spec:   v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	evicted := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gone"}, Spec: v1.PodSpec{NodeName: "node-1"}, Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}}
	unscheduled := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waiting"}, Status: v1.PodStatus{Phase: v1.PodPending}}
	var out bytes.Buffer
	if err := describeNode(&out, testNode(now), []v1.Pod{pod, evicted, unscheduled}, now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"Name:", "node-1", "DiskPressure", "KubeletHasDiskPressure", "Capacity:", "Allocatable:", "pods:", "110",
		"Non-terminated Pods:", "(1 in total)", "100m (5%)", "NodeHasDiskPressure", "Kubelet Version:"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe node lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "gone") || strings.Contains(text, "waiting") {
		t.Errorf("describe node lists a terminated or an unscheduled pod:\n%s", text)
	}
}

func TestEvictionFlagsParseAsKubelet(t *testing.T) {
	var f evictionFlags
	f.hard = defaultEvictionHard
	cfg, err := f.config()
	if err != nil || len(cfg.Thresholds) != 5 {
		t.Fatalf("defaults: %v, %v", cfg.Thresholds, err)
	}
	f.hard = "nodefs.available<99.9%"
	if cfg, err = f.config(); err != nil || len(cfg.Thresholds) != 1 {
		t.Fatalf("--eviction-hard replaces the defaults whole: %v, %v", cfg.Thresholds, err)
	}
	f.soft = "memory.available<1Gi"
	if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--eviction-soft") || !strings.Contains(err.Error(), "memory.available") {
		t.Errorf("soft without grace: %v", err)
	}
	f.soft, f.hard = "", "memory.available>1Gi"
	if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--eviction-hard") {
		t.Errorf("bad operator: %v", err)
	}
}

func TestNodeLabelsAndTaintsShown(t *testing.T) {
	now := time.Now()
	n := testNode(now)
	n.Node.Labels = map[string]string{"kubernetes.io/os": "linux", "disk": "ssd"}
	n.Node.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, {Key: "maint", Effect: v1.TaintEffectNoExecute}}
	var out bytes.Buffer
	if err := writeNode(&out, &n.Node, "", true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "LABELS") || !strings.HasSuffix(lines[1], "disk=ssd,kubernetes.io/os=linux") {
		t.Errorf("get node --show-labels:\n%s", out.String())
	}
	out.Reset()
	if err := describeNode(&out, n, nil, now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"Taints:", "dedicated=gpu:NoSchedule\n", "maint:NoExecute\n", "Unschedulable:", "disk=ssd"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe node lacks %q:\n%s", want, text)
		}
	}
	out.Reset()
	n.Node.Spec.Taints = nil
	if err := describeNode(&out, n, nil, now); err != nil || !strings.Contains(out.String(), "Taints:") || !strings.Contains(out.String(), "<none>") {
		t.Errorf("describe node without taints:\n%s", out.String())
	}
}
