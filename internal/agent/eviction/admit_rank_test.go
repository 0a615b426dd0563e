package eviction

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(name string, memRequest string, priority int32) *v1.Pod {
	c := v1.Container{Name: "app"}
	if memRequest != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memRequest), v1.ResourceEphemeralStorage: resource.MustParse(memRequest)}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{c}, Priority: &priority}}
}

func TestAdmitFollowsKubelet(t *testing.T) {
	bestEffort := testPod("be", "", 0)
	burstable := testPod("bu", "64Mi", 0)
	tolerating := testPod("tol", "", 0)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	diskTolerating := testPod("dtol", "64Mi", 0)
	diskTolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists}}
	critical := testPod("crit", "", 0)
	critical.Spec.PriorityClassName = "system-node-critical"
	mem := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeDiskPressure}
	both := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}
	for _, tc := range []struct {
		conds   []v1.NodeConditionType
		pod     *v1.Pod
		admit   bool
		message string
	}{
		{nil, bestEffort, true, ""},
		{mem, bestEffort, false, "The node had condition: [MemoryPressure]. "},
		{mem, burstable, true, ""},
		{mem, tolerating, true, ""},
		{mem, critical, true, ""},
		{disk, burstable, false, "The node had condition: [DiskPressure]. "},
		{disk, diskTolerating, false, "The node had condition: [DiskPressure]. "},
		{disk, critical, true, ""},
		{both, tolerating, false, "The node had condition: [MemoryPressure DiskPressure]. "},
		{[]v1.NodeConditionType{v1.NodePIDPressure}, burstable, false, "The node had condition: [PIDPressure]. "},
	} {
		ok, reason, msg := admit(tc.conds, tc.pod)
		if ok != tc.admit || msg != tc.message || (!ok && reason != "Evicted") {
			t.Errorf("%v, pod %s: got %v %q %q, want %v %q", tc.conds, tc.pod.Name, ok, reason, msg, tc.admit, tc.message)
		}
	}
}

func names(cs []Candidate) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod.Name)
	}
	return strings.Join(out, ",")
}

func TestRankMemory(t *testing.T) {
	cands := []Candidate{
		{Pod: testPod("burstable-under", "512Mi", 0), Usage: PodUsage{Memory: 100 * mi}, Known: true},
		{Pod: testPod("burstable-over-small", "10Mi", 0), Usage: PodUsage{Memory: 20 * mi}, Known: true},
		{Pod: testPod("besteffort", "", 0), Usage: PodUsage{Memory: 30 * mi}, Known: true},
		{Pod: testPod("high-priority-over", "", 1000), Usage: PodUsage{Memory: 900 * mi}, Known: true},
		{Pod: testPod("no-stats", "512Mi", 1000)},
		{Pod: testPod("burstable-under-more", "512Mi", 0), Usage: PodUsage{Memory: 10 * mi}, Known: true},
	}
	Rank(SignalMemoryAvailable, cands)
	want := "no-stats,besteffort,burstable-over-small,high-priority-over,burstable-under,burstable-under-more"
	if got := names(cands); got != want {
		t.Errorf("memory ranking\n got %s\nwant %s", got, want)
	}
}

func TestRankDiskAndPIDs(t *testing.T) {
	disk := []Candidate{
		{Pod: testPod("requests-1Gi", "1Gi", 0), Usage: PodUsage{Disk: 10 * mi}, Known: true},
		{Pod: testPod("besteffort-small", "", 0), Usage: PodUsage{Disk: 1 * mi}, Known: true},
		{Pod: testPod("besteffort-big", "", 0), Usage: PodUsage{Disk: 50 * mi}, Known: true},
	}
	Rank(SignalNodeFsAvailable, disk)
	if got, want := names(disk), "besteffort-big,besteffort-small,requests-1Gi"; got != want {
		t.Errorf("disk ranking %s, want %s", got, want)
	}
	pids := []Candidate{
		{Pod: testPod("few", "", 0), Usage: PodUsage{Processes: 2}, Known: true},
		{Pod: testPod("important", "", 10), Usage: PodUsage{Processes: 900}, Known: true},
		{Pod: testPod("many", "", 0), Usage: PodUsage{Processes: 90}, Known: true},
	}
	Rank(SignalPIDAvailable, pids)
	if got, want := names(pids), "many,few,important"; got != want {
		t.Errorf("pid ranking %s, want %s", got, want)
	}
}

func TestMessageIsKubelets(t *testing.T) {
	th := Defaults()[0]
	for _, d := range Defaults() {
		if d.Signal == SignalMemoryAvailable {
			th = d
		}
	}
	c := Candidate{Pod: testPod("p", "10Mi", 0), Usage: PodUsage{Memory: 20 * mi, Containers: []ContainerUsage{{Name: "app", Memory: 20 * mi}}}, Known: true}
	got := Message(th, memObs(50*mi), c)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 20Mi, request is 10Mi, has larger consumption of memory. "
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
}

func TestNodeConditionsKeepTransitionTimesWhileTheStatusStays(t *testing.T) {
	t0, t1, t2 := time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)
	first := NodeConditions(nil, nil, "", t0)
	if len(first) != 4 || first[0].Reason != "KubeletHasSufficientMemory" || first[3].Reason != "KubeletReady" || first[3].Status != v1.ConditionTrue {
		t.Fatalf("first: %+v", first)
	}
	second := NodeConditions(first, []v1.NodeConditionType{v1.NodeDiskPressure}, "", t1)
	disk := second[1]
	if disk.Status != v1.ConditionTrue || disk.Reason != "KubeletHasDiskPressure" || disk.Message != "kubelet has disk pressure" || !disk.LastTransitionTime.Time.Equal(t1) {
		t.Fatalf("disk pressure: %+v", disk)
	}
	if !second[0].LastTransitionTime.Time.Equal(t0) || !second[0].LastHeartbeatTime.Time.Equal(t1) {
		t.Fatalf("memory condition unchanged: transition %v heartbeat %v, want %v and %v", second[0].LastTransitionTime, second[0].LastHeartbeatTime, t0, t1)
	}
	third := NodeConditions(second, nil, "runtime down", t2)
	if third[1].Status != v1.ConditionFalse || !third[1].LastTransitionTime.Time.Equal(t2) {
		t.Fatalf("disk pressure over: %+v", third[1])
	}
	if r := third[3]; r.Status != v1.ConditionFalse || r.Reason != "KubeletNotReady" || r.Message != "runtime down" {
		t.Fatalf("not ready: %+v", r)
	}
}
