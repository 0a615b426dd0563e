package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// usernsPod runs NAME in a user namespace of its own, with an emptyDir.
const usernsPod = `
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {}}]
  initContainers:
  - {name: NAME-init, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
  containers:
  - {name: NAME-app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"], volumeMounts: [{name: scratch, mountPath: /scratch}]}
`

func usernsManifest(name string) string { return strings.ReplaceAll(usernsPod, "NAME", name) }

// startUsernsAgent runs an agent in dir whose runtime's handlers are
// handlers (CRI Status's user_namespaces).
func startUsernsAgent(t *testing.T, rt *criclienttest.Runtime, dir string, handlers map[string]bool) *testAgent {
	t.Helper()
	a, vols := newTestAgentWith(t, rt, dir, clock.RealClock{}, func(cfg *Config) { cfg.UserNamespaceHandlers = handlers })
	return runTestAgent(t, a, vols)
}

// sandboxUserns is the user namespace of pod's only sandbox.
func sandboxUserns(t *testing.T, rt *criclienttest.Runtime, pod string) *runtimeapi.UserNamespace {
	t.Helper()
	configs := rt.SandboxConfigs(pod)
	if len(configs) != 1 {
		t.Fatalf("pod %s has %d sandboxes; want 1", pod, len(configs))
	}
	for _, cfg := range configs {
		return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	}
	return nil
}

func TestHostUsersFalseGetsItsOwnUserNamespace(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	a := startUsernsAgent(t, rt, dir, map[string]bool{"": true})
	uid := a.apply(t, usernsManifest("iso")).Pods()[0].UID
	a.apply(t, strings.ReplaceAll(usernsManifest("plain"), "hostUsers: false", "hostUsers: true"))
	waitFor(t, "both pods run", func() bool {
		return a.pod(t, "iso").Status.Phase == v1.PodRunning && a.pod(t, "plain").Status.Phase == v1.PodRunning
	})
	ns := sandboxUserns(t, rt, "iso")
	host := ns.GetUids()[0].GetHostId()
	want := &runtimeapi.IDMapping{ContainerId: 0, HostId: host, Length: 65536}
	if ns.GetMode() != runtimeapi.NamespaceMode_POD || len(ns.GetUids()) != 1 || len(ns.GetGids()) != 1 ||
		ns.GetUids()[0].String() != want.String() || ns.GetGids()[0].String() != want.String() || host < 65536 || host%65536 != 0 {
		t.Fatalf("sandbox user namespace %v; want mode POD, {0, a multiple of 65536, 65536} for uids and gids", ns)
	}
	for _, name := range []string{"iso-init", "iso-app"} {
		for _, cfg := range rt.ContainerConfigs(name) {
			if got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.String() != ns.String() {
				t.Errorf("%s: user namespace %v; want the sandbox's %v", name, got, ns)
			}
			for _, m := range cfg.GetMounts() {
				if len(m.GetUidMappings()) != 1 || m.GetUidMappings()[0].String() != want.String() || len(m.GetGidMappings()) != 1 || m.GetGidMappings()[0].String() != want.String() {
					t.Errorf("%s: mount %s: uid %v gid %v; want the pod's mappings", name, m.GetContainerPath(), m.GetUidMappings(), m.GetGidMappings())
				}
			}
		}
	}
	if plain := sandboxUserns(t, rt, "plain"); plain.GetMode() != runtimeapi.NamespaceMode_NODE || len(plain.GetUids()) != 0 {
		t.Errorf("hostUsers: true: %v; want mode NODE, as kubelet 1.37 sends", plain)
	}
	record := filepath.Join(dir, "root", "userns", uid+".json")
	if _, err := os.Stat(record); err != nil {
		t.Errorf("allocation record: %v", err)
	}
	if _, err := a.Delete(context.Background(), "default", "iso", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "iso is removed", func() bool { _, err := a.DescribePod("default", "iso"); return err != nil })
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("allocation record after the pod's removal: %v", err)
	}
	if _, held := a.deps.userNamespaces.Allocation(uid); held {
		t.Error("the removed pod's block is still allocated")
	}
}

func TestHostUsersFalseNeedsAHandlerThatSupportsIt(t *testing.T) {
	rt := criclienttest.New()
	a := startUsernsAgent(t, rt, t.TempDir(), map[string]bool{"": false, "runc": true})
	uid := a.apply(t, usernsManifest("iso")).Pods()[0].UID
	const message = "pod default/iso: spec.hostUsers: false: the runtime's default handler does not support user namespaces"
	waitFor(t, "the sandbox is refused", func() bool {
		d, err := a.DescribePod("default", "iso")
		return err == nil && hasEventOf(d.Events, agentapi.EventWarning, "FailedCreatePodSandBox", message)
	})
	if sandboxes, _ := rt.Counts(); sandboxes != 0 {
		t.Errorf("%d sandboxes made for a pod its handler cannot run", sandboxes)
	}
	if _, held := a.deps.userNamespaces.Allocation(uid); held {
		t.Error("the refused pod got a block")
	}
}

func TestRestartKeepsUserNamespacesAndFreesOrphans(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	handlers := map[string]bool{"": true}
	first := startUsernsAgent(t, rt, dir, handlers)
	keptUID := first.apply(t, usernsManifest("kept")).Pods()[0].UID
	goneUID := first.apply(t, usernsManifest("gone")).Pods()[0].UID
	waitFor(t, "both pods run", func() bool {
		return first.pod(t, "kept").Status.Phase == v1.PodRunning && first.pod(t, "gone").Status.Phase == v1.PodRunning
	})
	kept := sandboxUserns(t, rt, "kept")
	first.stop()
	// The runtime loses the other pod while no agent runs.
	for id := range rt.SandboxConfigs("gone") {
		if err := rt.RemovePodSandbox(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	second := startUsernsAgent(t, rt, dir, handlers)
	waitFor(t, "kept runs under the new agent", func() bool { return second.pod(t, "kept").Status.Phase == v1.PodRunning })
	host, held := second.deps.userNamespaces.Allocation(keptUID)
	if !held || host != kept.GetUids()[0].GetHostId() {
		t.Errorf("kept's block after the restart: %d, %v; want %d", host, held, kept.GetUids()[0].GetHostId())
	}
	if got := sandboxUserns(t, rt, "kept"); got.String() != kept.String() {
		t.Errorf("kept's sandbox after the restart: %v; want it unchanged, %v", got, kept)
	}
	if _, held := second.deps.userNamespaces.Allocation(goneUID); held {
		t.Error("the block of the pod the runtime lost is still allocated")
	}
	if _, err := os.Stat(filepath.Join(dir, "root", "userns", goneUID+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lost pod's record: %v; want it removed", err)
	}
}

func TestBadUserNamespaceRangeStopsTheAgent(t *testing.T) {
	dir := t.TempDir()
	subuid := filepath.Join(dir, "subuid")
	if err := os.WriteFile(subuid, []byte("berth:1000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := criclienttest.New()
	_, err := New(Config{
		Runtime: rt, Images: rt, RootDir: dir + "/root", PodLogDir: dir + "/logs", NodeName: "node-1",
		SubUIDFile: subuid, SubGIDFile: subuid,
	})
	if err == nil || !strings.Contains(err.Error(), "first id 1000 is not a multiple of 65536") {
		t.Errorf("New with an unaligned range: %v; want refused", err)
	}
}
