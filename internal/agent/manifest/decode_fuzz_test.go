package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// fuzzSource is the absolute path every fuzzed source is read as, so that
// derived pod UIDs do not depend on the test's working directory.
const fuzzSource = "/etc/berth/pods/fuzz.yaml"

// FuzzDecode feeds arbitrary sources to Decode and Validate. A source that
// fails is an *InvalidError whose problems all name the source and
// something in it. A source that decodes has its defaults set (setting
// them again changes nothing); if it also validates, encoding its objects
// back to YAML, or to a JSON stream, and decoding that gives an equal,
// still valid bundle.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		webManifests, minimalPod, everythingDefaulted,
		podYAML("a", "busybox") + "---\n# only a comment\n---\n" + podYAML("b", "nginx:1.27") + "...\n",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"dg=="}},` +
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"binaryData":{"b":"AA=="}}]}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","uid":"fixed-uid"},"spec":{"containers":[{"name":"c","image":"i"}]}}` +
			"\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
		podYAML("web", "nginx") + "    imagePulPolicy: Always\n",
		podYAML("web", "nginx") + "    resources:\n      limits:\n        cpu: 1x\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", deploymentYAML,
		jobYAML("  completionMode: Indexed\n  completions: 3\n"+failurePolicy, "      restartPolicy: Never\n"),
		cronJobYAML("  schedule: \"*/5 * * * *\"\n  timeZone: Europe/Paris\n  startingDeadlineSeconds: 10\n"),
		"--- a: b\n",
		"- a\n- b\n",
	} {
		f.Add([]byte(seed))
	}
	for _, path := range []string{"../../../examples/pod.yaml", "testdata/realapp.yaml"} {
		if example, err := os.ReadFile(path); err == nil {
			f.Add(example)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(bytes.NewReader(data), fuzzSource)
		if err != nil {
			checkProblems(t, "Decode", err)
			return
		}
		again := cloneBundle(b)
		again.SetDefaults()
		if !equality.Semantic.DeepEqual(b, again) {
			t.Fatalf("SetDefaults after Decode changed the bundle:\n%s\nto\n%s", encodeBundle(t, b, false), encodeBundle(t, again, false))
		}
		if err := b.Validate(); err != nil {
			checkProblems(t, "Validate", err)
			return
		}
		for _, asJSON := range []bool{false, true} {
			encoded := encodeBundle(t, b, asJSON)
			decoded, err := Decode(bytes.NewReader(encoded), fuzzSource)
			if err != nil {
				t.Fatalf("re-encoded valid bundle does not decode: %v\n%s", err, encoded)
			}
			for i, d := range decoded.Deployments {
				// whether the text named spec.paused, which encoding
				// an unpaused Deployment leaves out
				d.KeepPaused = i < len(b.Deployments) && b.Deployments[i].KeepPaused
			}
			for i, p := range decoded.Pods {
				// the uid the text gave, which encoding replaces with the derived one
				if i < len(b.Pods) {
					p.IgnoredUID = b.Pods[i].IgnoredUID
				}
			}
			if !equality.Semantic.DeepEqual(b, decoded) {
				t.Fatalf("re-encoded bundle decodes differently:\n%s\nto\n%s", encoded, encodeBundle(t, decoded, asJSON))
			}
			if err := decoded.Validate(); err != nil {
				t.Fatalf("re-encoded valid bundle does not validate: %v\n%s", err, encoded)
			}
		}
	})
}

// checkProblems checks that err is an *InvalidError whose every problem
// names the fuzzed source and what is wrong.
func checkProblems(t *testing.T, step string, err error) {
	t.Helper()
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) == 0 {
		t.Fatalf("%s: error %T is not an *InvalidError with problems: %v", step, err, err)
	}
	for _, p := range inv.Problems {
		if p.Source != fuzzSource || p.Err == nil {
			t.Fatalf("%s: problem %#v does not name the source and the error", step, p)
		}
	}
}

// cloneBundle deep-copies b's objects.
func cloneBundle(b *Bundle) *Bundle {
	c := &Bundle{}
	c.ensureMaps()
	for _, p := range b.Pods {
		c.Pods = append(c.Pods, &Pod{Pod: p.DeepCopy(), Source: p.Source, IgnoredUID: p.IgnoredUID})
	}
	for key, cm := range b.ConfigMaps {
		c.ConfigMaps[key], c.ConfigMapSources[key] = cm.DeepCopy(), b.ConfigMapSources[key]
	}
	for key, s := range b.Secrets {
		c.Secrets[key], c.SecretSources[key] = s.DeepCopy(), b.SecretSources[key]
	}
	for _, d := range b.Deployments {
		c.Deployments = append(c.Deployments, &Deployment{Deployment: d.DeepCopy(), Source: d.Source, KeepPaused: d.KeepPaused})
	}
	for _, rs := range b.ReplicaSets {
		c.ReplicaSets = append(c.ReplicaSets, &ReplicaSet{ReplicaSet: rs.DeepCopy(), Source: rs.Source})
	}
	for _, ds := range b.DaemonSets {
		c.DaemonSets = append(c.DaemonSets, &DaemonSet{DaemonSet: ds.DeepCopy(), Source: ds.Source})
	}
	for _, st := range b.StatefulSets {
		c.StatefulSets = append(c.StatefulSets, &StatefulSet{StatefulSet: st.DeepCopy(), Source: st.Source})
	}
	for _, pvc := range b.PersistentVolumeClaims {
		c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, &PersistentVolumeClaim{PersistentVolumeClaim: pvc.DeepCopy(), Source: pvc.Source})
	}
	for _, svc := range b.Services {
		c.Services = append(c.Services, &Service{Service: svc.DeepCopy(), Source: svc.Source})
	}
	for _, j := range b.Jobs {
		c.Jobs = append(c.Jobs, &Job{Job: j.DeepCopy(), Source: j.Source})
	}
	for _, cj := range b.CronJobs {
		c.CronJobs = append(c.CronJobs, &CronJob{CronJob: cj.DeepCopy(), Source: cj.Source})
	}
	for _, sk := range b.Skipped {
		copied := *sk
		copied.ObjectMeta = *sk.ObjectMeta.DeepCopy()
		c.Skipped = append(c.Skipped, &copied)
	}
	return c
}

// encodeBundle writes b's objects (which keep the apiVersion and kind they
// were decoded with) as YAML documents or as a JSON stream.
func encodeBundle(t *testing.T, b *Bundle, asJSON bool) []byte {
	t.Helper()
	var objects []any
	for _, p := range b.Pods {
		objects = append(objects, p.Pod)
	}
	for _, key := range sortedKeys(b.ConfigMaps) {
		objects = append(objects, b.ConfigMaps[key])
	}
	for _, key := range sortedKeys(b.Secrets) {
		objects = append(objects, b.Secrets[key])
	}
	for _, d := range b.Deployments {
		objects = append(objects, d.Deployment)
	}
	for _, rs := range b.ReplicaSets {
		objects = append(objects, rs.ReplicaSet)
	}
	for _, ds := range b.DaemonSets {
		objects = append(objects, ds.DaemonSet)
	}
	for _, st := range b.StatefulSets {
		objects = append(objects, st.StatefulSet)
	}
	for _, pvc := range b.PersistentVolumeClaims {
		objects = append(objects, pvc.PersistentVolumeClaim)
	}
	for _, svc := range b.Services {
		objects = append(objects, svc.Service)
	}
	for _, j := range b.Jobs {
		objects = append(objects, j.Job)
	}
	for _, cj := range b.CronJobs {
		objects = append(objects, cj.CronJob)
	}
	for _, sk := range b.Skipped {
		objects = append(objects, map[string]any{"apiVersion": sk.APIVersion, "kind": sk.Kind, "metadata": sk.ObjectMeta})
	}
	var out bytes.Buffer
	for _, o := range objects {
		var data []byte
		var err error
		if asJSON {
			data, err = json.Marshal(o)
			data = append(data, '\n')
		} else {
			data, err = yaml.Marshal(o)
			out.WriteString("---\n")
		}
		if err != nil {
			t.Fatalf("encode %T: %v", o, err)
		}
		out.Write(data)
	}
	return out.Bytes()
}
