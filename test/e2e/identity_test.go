package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// uidPod is a pod named NAME whose manifest may give a metadata.uid (UID).
const uidPod = `
apiVersion: v1
kind: Pod
metadata: {name: NAME UID}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

// A pod whose manifest names another pod's uid is a pod of its own, with
// the agent's uid: apply warns, and deleting it leaves the other running
// with its uid (issue 19, item 5).
func TestManifestUIDDoesNotAliasAnotherPod(t *testing.T) {
	onEachRuntime(t, manifestUIDDoesNotAlias)
}

func manifestUIDDoesNotAlias(t *testing.T, n *node) {
	n.apply("a.yaml", strings.NewReplacer("NAME", "a", "UID", "").Replace(uidPod))
	a := n.waitPod("a", "app running", running("app"))
	manifest := n.write("b.yaml", strings.NewReplacer("NAME", "b", "UID", ", uid: "+string(a.UID)).Replace(uidPod))
	out, errOut, err := n.berth("apply", "-f", manifest)
	if err != nil || !strings.Contains(out, "pod/b created") || !strings.Contains(errOut, `Warning: pod/b: metadata.uid "`+string(a.UID)+`" ignored`) {
		t.Fatalf("apply of b with a's uid: %v\nstdout %q\nstderr %q\nwant pod/b created and a warning", err, out, errOut)
	}
	b := n.waitPod("b", "app running", running("app"))
	if b.UID == a.UID {
		t.Fatalf("b took a's uid %s", a.UID)
	}
	n.deleteAndCheckGone("b")
	now := n.pod("a")
	if now.UID != a.UID || now.DeletionTimestamp != nil || containerStatus(now, "app").State.Running == nil {
		t.Errorf("after deleting b, a is uid %s, deleting %v, app %+v; want uid %s, running", now.UID, now.DeletionTimestamp, containerStatus(now, "app").State, a.UID)
	}
}

// plantedLogPods: shipper has the pods' log directory mounted (a log
// shipper's hostPath over /var/log) and plants victim's next log, app's
// 1.log, as a symlink to a host file, then says so in SHARED/planted;
// victim's app exits once it is, and its restart's log is 1.log.
const plantedLogPods = `
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: shared, hostPath: {path: SHARED, type: Directory}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'until [ -e /shared/planted ]; do sleep 0.1; done; echo first run; exit 1']
    volumeMounts: [{name: shared, mountPath: /shared}]
---
apiVersion: v1
kind: Pod
metadata: {name: shipper}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: logs, hostPath: {path: LOGS, type: Directory}}
  - {name: shared, hostPath: {path: SHARED, type: Directory}}
  containers:
  - name: plant
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'until ls -d /logs/default_victim_*/app >/dev/null 2>&1; do sleep 0.1; done; for d in /logs/default_victim_*/app; do ln -s TARGET $d/1.log; done && touch /shared/planted; exec sleep 3600']
    volumeMounts: [{name: logs, mountPath: /logs}, {name: shared, mountPath: /shared}]
`

// A log symlink planted by a container is not followed: berth's monitor
// refuses to run the container whose log it is (a Failed event naming the
// symlink) and the host file is untouched (issue 19, item 7).
// berth serve only: containerd opens the log by path.
func TestPlantedLogSymlinkIsNotFollowed(t *testing.T) {
	n := startNode(t, runtimes[0])
	shared := t.TempDir()
	target := filepath.Join(t.TempDir(), "profile.sh")
	if err := os.WriteFile(target, []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.apply("planted.yaml", strings.NewReplacer("SHARED", shared, "LOGS", n.logDir, "TARGET", target).Replace(plantedLogPods))
	n.waitPod("shipper", "plant running", running("plant"))
	deadline := time.Now().Add(30 * time.Second)
	for _, err := os.Stat(filepath.Join(shared, "planted")); err != nil; _, err = os.Stat(filepath.Join(shared, "planted")) {
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "pod", "shipper")
			logs, _, _ := n.berth("logs", "shipper")
			t.Fatalf("the shipper planted nothing in 30 s: %v\n%s\n%s", err, desc, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The refused start is a StartError exit; the next attempt has a log
	// path of its own and runs, so the refusal shows for good in the
	// pod's events, not in its (moving) container state.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		desc, _, _ := n.berth("describe", "pod", "victim")
		if strings.Contains(desc, "a symlink, not followed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim's restart was not refused in 30 s:\n%s", desc)
		}
	}
	// The agent's container GC may already have removed the dead attempt's
	// log, the planted link itself (as kubelet's log manager does, without
	// following it); what is left the test removes.
	links, _ := filepath.Glob(filepath.Join(n.logDir, "default_victim_*", "app", "1.log"))
	for _, l := range links {
		if err := os.Remove(l); err != nil {
			t.Error(err)
		}
	}
	if len(links) > 1 {
		t.Errorf("planted links: %v, want at most one", links)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "untouched\n" {
		t.Errorf("the symlink's target: %q, %v; want it untouched", data, err)
	}
}
