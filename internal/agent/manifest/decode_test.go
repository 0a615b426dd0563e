package manifest

import (
	"strings"
	"testing"
)

func TestDecodeMultiDocumentYAML(t *testing.T) {
	b := decodeString(t, webManifests, "web.yaml")
	if len(b.Pods) != 1 || len(b.ConfigMaps) != 1 || len(b.Secrets) != 1 {
		t.Fatalf("decoded %d pods, %d configmaps, %d secrets; want 1 of each", len(b.Pods), len(b.ConfigMaps), len(b.Secrets))
	}
	pod := b.Pods[0]
	if pod.Name != "web" || pod.Source != "web.yaml" {
		t.Errorf("pod %q from %q, want web from web.yaml", pod.Name, pod.Source)
	}
	if len(pod.Spec.InitContainers) != 2 || pod.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Errorf("pod spec not decoded: %+v", pod.Spec)
	}
	if got := b.ConfigMaps["default/web-config"].Data["log_level"]; got != "info" {
		t.Errorf("configmap log_level = %q, want info", got)
	}
	if b.ConfigMapSources["default/web-config"] != "web.yaml" || b.SecretSources["default/web-secret"] != "web.yaml" {
		t.Errorf("sources = %v %v, want web.yaml", b.ConfigMapSources, b.SecretSources)
	}
	if err := b.Validate(); err != nil {
		t.Errorf("the docs-style manifests must validate: %v", err)
	}
}

func TestDecodeJSONStreamAndList(t *testing.T) {
	manifests := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "team"}, "data": {"k": "v"}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
]}`
	b := decodeString(t, manifests, "pods.json")
	if len(b.Pods) != 2 || b.Pods[0].Name != "a" || b.Pods[1].Name != "b" {
		t.Fatalf("pods = %v, want a then b", b.Pods)
	}
	if _, found := b.ConfigMaps["team/cm"]; !found {
		t.Errorf("configmap team/cm missing: %v", b.ConfigMaps)
	}
}

func TestDecodeYAMLList(t *testing.T) {
	manifests := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(podYAML("one", "busybox"), "\n", "\n  ") +
		"\n- " + strings.ReplaceAll(podYAML("two", "busybox"), "\n", "\n  ")
	b := decodeString(t, manifests, "list.yaml")
	if len(b.Pods) != 2 || b.Pod("default", "two") == nil {
		t.Fatalf("pods = %v, want one and two", b.Pods)
	}
}

func TestDecodeSkipsEmptyAndCommentDocuments(t *testing.T) {
	manifests := "---\n# just a comment\n---\n" + podYAML("a", "busybox") + "---\n\n...\n"
	b := decodeString(t, manifests, "a.yaml")
	onlyPod(t, b)
}

// decodeErrorCases are manifests that must not decode, and what the error
// must say about them.
var decodeErrorCases = []struct {
	name      string
	manifests string
	want      []string
}{
	{
		name:      "unknown kind names file and kind",
		manifests: "apiVersion: apps/v1\nkind: DaemonSetX\nmetadata:\n  name: web\n",
		want:      []string{`deploy.yaml: DaemonSetX default/web: unsupported kind "DaemonSetX" (apiVersion "apps/v1")`},
	},
	{
		name:      "a Deployment is apps/v1",
		manifests: "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: web\n",
		want:      []string{`deploy.yaml: Deployment default/web: unsupported apiVersion "v1" for kind Deployment: want "apps/v1"`},
	},
	{
		name:      "a Deployment's misspelt field is named with its path",
		manifests: deploymentYAML + "        imagePulPolicy: Always\n",
		want:      []string{`deploy.yaml: Deployment default/web: unknown field "spec.template.spec.containers[0].imagePulPolicy"`},
	},
	{
		name:      "misspelt field is named with its path",
		manifests: podYAML("web", "nginx") + "    imagePulPolicy: Always\n",
		want:      []string{`deploy.yaml: Pod default/web: unknown field "spec.containers[0].imagePulPolicy"`},
	},
	{
		name:      "field names are case-sensitive",
		manifests: podYAML("web", "nginx") + "    Command: [sh]\n",
		want:      []string{`unknown field "spec.containers[0].Command"`},
	},
	{
		name:      "duplicate key",
		manifests: podYAML("web", "nginx") + "    image: other\n",
		want:      []string{`deploy.yaml: document 1 (line 1):`, `key "image" already set`},
	},
	{
		name:      "core kind with the wrong apiVersion",
		manifests: "apiVersion: v2\nkind: Pod\nmetadata:\n  name: web\n",
		want:      []string{`Pod default/web: unsupported apiVersion "v2" for kind Pod`},
	},
	{
		name:      "missing kind",
		manifests: "apiVersion: v1\nmetadata:\n  name: web\n",
		want:      []string{`deploy.yaml: document 1 (line 1): missing "kind"`},
	},
	{
		name:      "missing apiVersion",
		manifests: "kind: Pod\nmetadata:\n  name: web\n",
		want:      []string{`Pod default/web: missing "apiVersion"`},
	},
	{
		name:      "not an object",
		manifests: "- a\n- b\n",
		want:      []string{"not an object"},
	},
	{
		name:      "quantity that does not parse",
		manifests: podYAML("web", "nginx") + "    resources:\n      limits:\n        cpu: 1x\n",
		want:      []string{"Pod default/web: quantities must match"},
	},
	{
		name:      "wrong value type",
		manifests: podYAML("web", "nginx") + "    env:\n    - name: PORT\n      value: 8080\n",
		want:      []string{"Pod default/web:", "cannot unmarshal number", "of type string"},
	},
	{
		name:      "YAML syntax error names the document and its line",
		manifests: podYAML("a", "busybox") + "---\nkind: [\n",
		want:      []string{"deploy.yaml: document 2 (line 10):"},
	},
	{
		name:      "content after a separator",
		manifests: podYAML("a", "busybox") + "--- kind: Pod\n",
		want:      []string{"document 2 (line 9): content after the document separator"},
	},
	{
		name:      "duplicate object in one file",
		manifests: podYAML("a", "busybox") + "---\n" + podYAML("a", "nginx"),
		want:      []string{"deploy.yaml: Pod default/a: also defined in deploy.yaml"},
	},
	{
		name:      "list item problems",
		manifests: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Endpoints\n  metadata:\n    name: s\n- {}\n",
		want:      []string{`Endpoints default/s: unsupported kind "Endpoints"`, `document 1 (line 1) items[1]: missing "kind"`},
	},
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range decodeErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeError(t, tc.manifests, "deploy.yaml")
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("error\n%s\ndoes not contain %q", got, want)
				}
			}
		})
	}
}

func TestDecodeReportsEveryDocumentProblem(t *testing.T) {
	manifests := podYAML("a", "busybox") + "    bogus: 1\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: j\n"
	got := decodeError(t, manifests, "m.yaml")
	if n := strings.Count(got, "\n") + 1; n != 2 {
		t.Errorf("got %d problems, want 2:\n%s", n, got)
	}
}

func TestSecretStringDataMergesIntoData(t *testing.T) {
	manifests := `apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  user: YWRtaW4=
  password: b2xk
stringData:
  password: new
  token: abc
`
	b := decodeString(t, manifests, "s.yaml")
	s := b.Secrets["default/creds"]
	want := map[string]string{"user": "admin", "password": "new", "token": "abc"}
	if len(s.Data) != len(want) {
		t.Fatalf("data = %v, want %v", s.Data, want)
	}
	for key, value := range want {
		if string(s.Data[key]) != value {
			t.Errorf("data[%s] = %q, want %q", key, s.Data[key], value)
		}
	}
	if s.StringData != nil {
		t.Errorf("stringData = %v, want it cleared", s.StringData)
	}
}

func TestDecodeDropsPodStatus(t *testing.T) {
	manifests := podYAML("a", "busybox") + "status:\n  phase: Running\n  podIP: 10.0.0.9\n"
	pod := onlyPod(t, decodeString(t, manifests, "a.yaml"))
	if pod.Status.Phase != "" || pod.Status.PodIP != "" {
		t.Errorf("status = %+v, want it dropped as on create", pod.Status)
	}
}

func TestMergeRefusesDuplicatesNamingBothSources(t *testing.T) {
	first := decodeString(t, webManifests, "first.yaml")
	second := decodeString(t, webManifests, "second.yaml")
	err := first.Merge(second)
	if err == nil {
		t.Fatal("Merge of the same objects succeeded")
	}
	for _, want := range []string{
		"second.yaml: Pod default/web: also defined in first.yaml",
		"second.yaml: ConfigMap default/web-config: also defined in first.yaml",
		"second.yaml: Secret default/web-secret: also defined in first.yaml",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not contain %q", err, want)
		}
	}
	if len(first.Pods) != 1 {
		t.Errorf("a failed Merge added pods: %d", len(first.Pods))
	}
	other := decodeString(t, podYAML("other", "busybox"), "other.yaml")
	if err := first.Merge(other); err != nil || first.Pod("default", "other").Source != "other.yaml" {
		t.Errorf("Merge of a new pod: %v", err)
	}
}

func TestReferenced(t *testing.T) {
	b := decodeString(t, webManifests, "web.yaml")
	if err := b.Merge(decodeString(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unrelated\n", "u.yaml")); err != nil {
		t.Fatal(err)
	}
	configMaps, secrets := b.Referenced(onlyPod(t, b))
	if len(configMaps) != 1 || configMaps[0].Name != "web-config" || len(secrets) != 1 || secrets[0].Name != "web-secret" {
		t.Errorf("Referenced = %v, %v; want web-config and web-secret", configMaps, secrets)
	}
}
