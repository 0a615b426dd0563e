package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// everyKind holds one object of each kind the agent takes.
const everyKind = `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {token: t0k3n}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {app: solo}}
spec:
  containers:
  - name: solo
    image: busybox:1
    command: [sleep, "1000"]
    envFrom: [{configMapRef: {name: conf}}, {secretRef: {name: creds}}]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, persistentVolumeClaim: {claimName: scratch}}]
---
apiVersion: v1
kind: Service
metadata: {name: solo}
spec:
  selector: {app: solo}
  ports: [{port: 18081, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep}
spec:
  replicas: 1
  selector: {matchLabels: {app: dep}}
  template:
    metadata: {labels: {app: dep}}
    spec: {containers: [{name: dep, image: busybox:1, command: [sleep, "1000"]}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 1
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: rs, image: busybox:1, command: [sleep, "1000"]}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  serviceName: sts
  replicas: 1
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec:
      containers:
      - {name: sts, image: busybox:1, command: [sleep, "1000"], volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec: {containers: [{name: ds, image: busybox:1, command: [sleep, "1000"]}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: job, image: busybox:1, command: [sleep, "1000"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron}
spec:
  schedule: "0 0 29 2 *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: cron, image: busybox:1, command: [sleep, "1000"]}]
`

// inventory names every object the agent shows, with its uid.
func (a *testAgent) inventory(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range a.ListPods("").Items {
		out = append(out, "Pod "+p.Name+" "+string(p.UID))
	}
	for _, r := range []string{agentapi.ResourcePersistentVolumeClaim, agentapi.ResourceService, agentapi.ResourceDeployment,
		agentapi.ResourceReplicaSet, agentapi.ResourceStatefulSet, agentapi.ResourceDaemonSet, agentapi.ResourceJob, agentapi.ResourceCronJob} {
		l, err := a.ListWorkloads(r, "")
		if err != nil {
			t.Fatalf("list %s: %v", r, err)
		}
		for _, c := range l.PersistentVolumeClaims {
			out = append(out, "PersistentVolumeClaim "+c.Name+" "+string(c.UID))
		}
		for _, s := range l.Services {
			out = append(out, "Service "+s.Name+" "+string(s.UID)+" "+s.Spec.ClusterIP)
		}
		for _, d := range l.Deployments {
			out = append(out, "Deployment "+d.Name+" "+string(d.UID))
		}
		for _, rs := range l.ReplicaSets {
			out = append(out, "ReplicaSet "+rs.Name+" "+string(rs.UID))
		}
		for _, s := range l.StatefulSets {
			out = append(out, "StatefulSet "+s.Name+" "+string(s.UID))
		}
		for _, ds := range l.DaemonSets {
			out = append(out, "DaemonSet "+ds.Name+" "+string(ds.UID))
		}
		for _, j := range l.Jobs {
			out = append(out, "Job "+j.Name+" "+string(j.UID))
		}
		for _, cj := range l.CronJobs {
			out = append(out, "CronJob "+cj.Name+" "+string(cj.UID))
		}
	}
	slices.Sort(out)
	return out
}

// kindResources is `berth delete -f`'s resource for each kind of a bundle.
var kindResources = map[string]string{
	"PersistentVolumeClaim": agentapi.ResourcePersistentVolumeClaim, "Service": agentapi.ResourceService,
	"Deployment": agentapi.ResourceDeployment, "ReplicaSet": agentapi.ResourceReplicaSet,
	"StatefulSet": agentapi.ResourceStatefulSet, "DaemonSet": agentapi.ResourceDaemonSet,
	"Job": agentapi.ResourceJob, "CronJob": agentapi.ResourceCronJob,
}

// One bundle of every kind comes back whole after a restart (same uids,
// no pod made twice), and deleting each of its objects as `berth delete
// -f` does leaves nothing: no pod, object, record, claim or address.
func TestEveryKindSurvivesARestartAndDeletesClean(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	link := newFakeLink()
	port := freePort(t)
	first := startServicesAgent(t, rt, dir, link, port)
	first.apply(t, everyKind)
	waitFor(t, "six pods run", func() bool {
		running := 0
		for _, p := range first.ListPods("").Items {
			if ready(p) {
				running++
			}
		}
		return running == 6
	})
	before := first.inventory(t)
	kinds := map[string]bool{}
	for _, e := range first.ListEvents("").Items {
		kinds[e.Kind] = true
	}
	for _, want := range []string{"", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Node"} {
		if !kinds[want] {
			t.Errorf("no event of kind %q listed (kinds seen: %v); want the events of every object, as kubectl get events", want, kinds)
		}
	}
	for _, want := range []string{"Pod solo ", "PersistentVolumeClaim scratch ", "PersistentVolumeClaim data-sts-0 ", "Service solo ",
		"Deployment dep ", "ReplicaSet dep-", "ReplicaSet rs ", "StatefulSet sts ", "DaemonSet ds ", "Job job ", "CronJob cron "} {
		if !slices.ContainsFunc(before, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("missing %q in %q", want, before)
		}
	}
	first.stop()

	second := startServicesAgent(t, rt, dir, link, port)
	waitFor(t, "the restarted agent shows the same objects", func() bool { return slices.Equal(second.inventory(t), before) })

	b := bundle(t, everyKind)
	for _, p := range b.Pods {
		if _, err := second.Delete(context.Background(), p.Namespace, p.Name, nil); err != nil {
			t.Fatalf("delete pod %s: %v", p.Name, err)
		}
	}
	for _, w := range b.Workloads() {
		if _, err := second.DeleteWorkload(context.Background(), kindResources[w.Kind], w.Meta.Namespace, w.Meta.Name, nil); err != nil {
			t.Fatalf("delete %s %s: %v", w.Kind, w.Meta.Name, err)
		}
	}
	waitFor(t, "nothing left", func() bool {
		records, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		return len(second.inventory(t)) == 0 && len(records) == 0 && !link.has("test-svc", "127.77.0.1")
	})
	if claims, _ := os.ReadDir(filepath.Join(dir, "root", "claims", "volumes")); len(claims) != 0 {
		t.Errorf("claims left: %v", claims)
	}
}
