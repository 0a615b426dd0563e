package e2e

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// The node's disk: an ext4 of its own, the app images' random payload and
// what the hog pod writes into its writable layer.
const (
	longrunDiskMiB = 384
	longrunAppMiB  = 20
	longrunHogMiB  = 48
	// longrunChattySeconds chatty writes at full speed, far more than its
	// log keeps.
	longrunChattySeconds = 20
)

// longrunAgent: log rotation as TestLogRotation's, image GC at kubelet's
// thresholds (85/80) but looking every second at images 5s old (kubelet:
// 5m and 2m), eviction at kubelet's default thresholds with a 5s
// transition period.
var longrunAgent = []string{
	fmt.Sprintf("--container-log-max-size=%d", rotationMaxSize),
	fmt.Sprintf("--container-log-max-files=%d", rotationMaxFiles),
	"--container-log-monitor-interval=1s",
	"--image-gc-period=1s", "--image-minimum-gc-age=5s",
	"--eviction-pressure-transition-period=5s",
}

// longrunPods run through the whole test: chatty (chattyPod, BestEffort)
// beside them; crash loops; hog (BestEffort) fills its writable layer; app
// runs the registry's image; bare is the image without a shell. The
// Burstable ones request a little ephemeral storage, so that disk
// eviction ranks them after the BestEffort pods.
const longrunPods = `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo crashing; exit 1"]
    resources: {requests: {ephemeral-storage: 10Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "dd if=/dev/zero of=/hog bs=1M count=%d && sync && echo hogged && exec sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: bare, labels: {app: bare}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + bareRef + `
    imagePullPolicy: IfNotPresent
    resources: {requests: {ephemeral-storage: 10Mi}}
`

// longrunApp is the pod of the registry's image (%s).
const longrunApp = `
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources: {requests: {ephemeral-storage: 10Mi}}
`

// TestLongRunningNode is issue 13's acceptance on berth serve, started as
// contrib/systemd/berth.service's ExecStart starts it (Type=notify: READY=1
// is awaited), its root and pod logs on a small ext4 of the test's own:
// logs written at full speed keep every retained line once (in the files
// and in `berth logs`, also followed), images pulled and replaced by new
// tags (the old one collected once the disk passes 85%, the needed ones
// never), a crash loop (dead containers bounded); then the disk filled
// until DiskPressure: image GC frees what it may, the BestEffort hog is
// evicted, a new pod rejected; with the filler gone the condition clears
// after the transition period and a new pod runs; the disk's use stays
// bounded throughout. Last, every debugging command on the pod of the
// image without a shell. containerd is left out: its root is not the
// agent's to place on the small disk, and every part runs on containerd in
// its own test (TestLogRotation, TestGarbageCollectionKeepsWhatPodsNeed,
// TestDiskPressureRejectsAndEvictsInKubeletsOrder, the debug tests).
func TestLongRunningNode(t *testing.T) {
	mnt := harness.SmallFilesystem(t, longrunDiskMiB)
	n := startUnitNode(t, mnt, longrunAgent)
	disk := watchDisk(t, n, mnt)
	reg := registry.StartT(t, registry.Options{})

	n.apply("pods.yaml", fmt.Sprintf(longrunPods, longrunHogMiB))
	n.apply("chatty.yaml", chattyPod(longrunChattySeconds))
	chatty := n.waitPod("chatty", "chatty runs", running("chatty"))
	followed := n.followLogs("chatty")
	v1ref, v1id := pushApp(t, reg, "v1")
	n.apply("app.yaml", fmt.Sprintf(longrunApp, v1ref))
	n.waitPod("app", "app runs "+v1ref, runningImage("app", v1ref))
	v2ref, v2id := pushApp(t, reg, "v2")
	n.apply("app.yaml", fmt.Sprintf(longrunApp, v2ref))
	n.waitPod("app", "app runs "+v2ref, runningImage("app", v2ref))
	if !n.hasImage(v1id) {
		t.Errorf("%s went while the disk was below the high threshold", v1ref)
	}
	written := longrunLogs(t, n, chatty, followed)
	disk.setLogBound(written, longrunChattySeconds)
	n.waitPod("hog", "hog wrote its file", func(v1.Pod) bool {
		out, _, _ := n.berth("logs", "hog")
		return strings.Contains(out, "hogged")
	})
	n.waitPod("crash", "three restarts", func(p v1.Pod) bool { return containerStatus(p, "app").RestartCount >= 3 })

	longrunPressure(t, n, disk)
	n.waitImageGone(v1id, "the replaced image "+v1ref)
	for _, ref := range []string{v2id, "busybox", bareRef} {
		if !n.hasImage(ref) {
			t.Errorf("image %s, which a pod runs, was removed", ref)
		}
	}
	longrunDebug(t, n)
	disk.check(t, n)
}

// pushApp pushes the app image with a random payload (compressing to its
// full size) as tag and returns its reference and id.
func pushApp(t *testing.T, reg *registry.Registry, tag string) (string, string) {
	t.Helper()
	payload := make([]byte, longrunAppMiB<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	pushed, err := reg.PushImage("berth/app:"+tag, testimage.Options{ExtraFiles: map[string]string{"/payload": string(payload)}})
	if err != nil {
		t.Fatal(err)
	}
	return pushed.Ref, pushed.ID
}

func runningImage(container, ref string) func(v1.Pod) bool {
	return func(p v1.Pod) bool {
		st := containerStatus(p, container)
		return st.State.Running != nil && st.Image == ref
	}
}

// longrunLogs checks chatty's log once it is done: the retained files
// hold every kept line once, in order, up to the last; `berth logs` and
// the `berth logs -f` started with the pod show the same; the rotation
// kept far less than chatty wrote. It returns the bytes chatty wrote.
func longrunLogs(t *testing.T, n *node, chatty v1.Pod, followed *logsFollower) int64 {
	t.Helper()
	path := n.logPath(chatty, "chatty")
	nums, last := n.waitChattyDone(path, false, time.Now().Add(2*time.Minute))
	checkContiguous(t, "the retained files", nums, nums[0], last-1)
	rotated, err := logrotate.RotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != rotationMaxFiles-1 || nums[0] == 0 {
		t.Errorf("%d rotated files, first line kept %d; want %d files and the oldest lines gone", len(rotated), nums[0], rotationMaxFiles-1)
	}
	written := int64(last) * int64(len("line  \n"+chattyDots)+len(strconv.Itoa(last)))
	t.Logf("chatty wrote %d lines (%d MiB); lines %d on kept", last, written>>20, nums[0])
	checkContiguous(t, "berth logs", outputLines(t, "berth logs", n.must("logs", "chatty"), false), nums[0], last-1)
	followed.waitLast(fmt.Sprintf("last %d end\n", last), time.Now().Add(time.Minute))
	fl := outputLines(t, "berth logs -f", followed.String(), false)
	if !checkContiguous(t, "berth logs -f", fl, fl[0], last-1) {
		t.Logf("berth logs -f's stderr:\n%s", followed.Errors())
	}
	return written
}

// longrunPressure fills the disk until DiskPressure, holding it there
// (imagefs.available below kubelet's 15%, nodefs.available above its 10%)
// until the hog pod was evicted and a new pod rejected; then removes the
// filler and waits until the condition clears and a new pod runs.
func longrunPressure(t *testing.T, n *node, disk *diskWatch) {
	t.Helper()
	const target = 0.12
	disk.holdUntil(t, n, target, "DiskPressure shows in get node", func() bool {
		return conditionOf(n.nodeConditions(), v1.NodeDiskPressure).Status == v1.ConditionTrue
	})
	if out := n.must("get", "node"); !strings.Contains(out, "Ready") {
		t.Errorf("get node under pressure:\n%s", out)
	}
	if desc := n.must("describe", "node"); !strings.Contains(desc, "KubeletHasDiskPressure") {
		t.Errorf("describe node lacks KubeletHasDiskPressure:\n%s", desc)
	}
	disk.holdUntil(t, n, target, "the hog pod is evicted", func() bool { return n.pod("hog").Status.Phase == v1.PodFailed })
	hog := n.pod("hog")
	if msg := "The node was low on resource: ephemeral-storage."; hog.Status.Reason != "Evicted" || !strings.HasPrefix(hog.Status.Message, msg) {
		t.Errorf("hog: reason %q message %q; want Evicted %q...", hog.Status.Reason, hog.Status.Message, msg)
	}
	if !n.hasEvent("hog", "Evicted") {
		t.Error("no Evicted event for hog")
	}
	n.apply("late.yaml", strings.ReplaceAll(pressureBestEffort, "name: besteffort", "name: late"))
	disk.holdUntil(t, n, target, "the late pod is rejected", func() bool { return n.pod("late").Status.Phase == v1.PodFailed })
	if want := "Pod was rejected: The node had condition: [DiskPressure]. "; n.pod("late").Status.Message != want {
		t.Errorf("late pod: %q; want %q", n.pod("late").Status.Message, want)
	}
	disk.removeFiller(t)
	n.waitNode("DiskPressure is False", func(conds []v1.NodeCondition) bool {
		return conditionOf(conds, v1.NodeDiskPressure).Status == v1.ConditionFalse
	})
	// The threshold was met when hog was evicted: the condition stays for
	// the transition period (5s) after that at least.
	if cleared, met := n.nodeCondition(v1.NodeDiskPressure).LastTransitionTime.Time, n.eventTime("hog", "Evicted"); cleared.Before(met.Add(5 * time.Second)) {
		t.Errorf("DiskPressure cleared at %s, the threshold was met at %s: want the 5s transition period kept", cleared, met)
	}
	for _, name := range []string{"crash", "app", "bare"} {
		if p := n.pod(name); p.Status.Phase != v1.PodRunning {
			t.Errorf("Burstable pod %s is %s (%s); want it kept running", name, p.Status.Phase, p.Status.Message)
		}
	}
	if p := n.pod("chatty"); p.Status.Phase == v1.PodFailed && n.eventTime("chatty", "Evicted").Before(n.eventTime("hog", "Evicted")) {
		t.Errorf("chatty was evicted before hog")
	}
	n.apply("again.yaml", strings.ReplaceAll(pressureBestEffort, "name: besteffort", "name: again"))
	n.waitPod("again", "admitted and running", running("app"))
	n.waitPod("crash", "at most two containers of the crash loop", func(p v1.Pod) bool { return n.containersOf(string(p.UID)) <= 2 })
}
