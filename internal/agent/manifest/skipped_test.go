package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// skippedCases: one object of every skipped kind, the resource kubectl
// names it by, the namespace berth gives it and a word of its reason.
var skippedCases = []struct {
	yaml, resource, namespace, reason string
}{
	{"apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n", "namespace", "", "exists implicitly"},
	{"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web, namespace: shop}\n", "serviceaccount", "shop", "no token is mounted"},
	{"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: web}\nspec: {hard: {pods: '10'}}\n", "resourcequota", "default", "quota"},
	{"apiVersion: v1\nkind: LimitRange\nmetadata: {name: web}\nspec: {limits: []}\n", "limitrange", "default", "LimitRanger"},
	{"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: {rules: []}\n", "ingress.networking.k8s.io", "default", "NodePort or LoadBalancer"},
	{"apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx, namespace: ignored}\n", "ingressclass.networking.k8s.io", "", "ingress controller"},
	{"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny}\nspec: {podSelector: {}}\n", "networkpolicy.networking.k8s.io", "default", "not enforced"},
	{"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n", "horizontalpodautoscaler.autoscaling", "default", "autoscaler"},
	{"apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n", "horizontalpodautoscaler.autoscaling", "default", "autoscaler"},
	{"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\n", "poddisruptionbudget.policy", "default", "evictions"},
	{"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n", "priorityclass.scheduling.k8s.io", "", "priority"},
	{"apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: x\n", "storageclass.storage.k8s.io", "", "claim"},
	{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reader}\nrules: []\n", "role.rbac.authorization.k8s.io", "default", "RBAC"},
	{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: reader}\n", "rolebinding.rbac.authorization.k8s.io", "default", "RBAC"},
	{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:reader'}\n", "clusterrole.rbac.authorization.k8s.io", "", "RBAC"},
	{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: reader}\n", "clusterrolebinding.rbac.authorization.k8s.io", "", "RBAC"},
}

func TestSkippedKindsDecodeAndValidate(t *testing.T) {
	if len(skippedCases) != len(skipKinds)+1 { // HorizontalPodAutoscaler twice
		t.Errorf("%d cases for %d skipped kinds: test every kind", len(skippedCases), len(skipKinds))
	}
	for _, tc := range skippedCases {
		kind := strings.SplitN(strings.SplitN(tc.yaml, "kind: ", 2)[1], "\n", 2)[0]
		t.Run(kind, func(t *testing.T) {
			b := decodeString(t, tc.yaml, "app.yaml")
			if err := b.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if len(b.Skipped) != 1 || b.Empty() || len(b.Workloads()) != 0 {
				t.Fatalf("skipped %d objects, empty %v, %d workloads; want 1 skipped, not empty, no workloads", len(b.Skipped), b.Empty(), len(b.Workloads()))
			}
			s := b.Skipped[0]
			if s.Kind != kind || s.Resource() != tc.resource || s.Namespace != tc.namespace || s.Source != "app.yaml" {
				t.Errorf("skipped %s %s %q from %s; want %s %s %q from app.yaml", s.Kind, s.Resource(), s.Namespace, s.Source, kind, tc.resource, tc.namespace)
			}
			if reason, ok := SkipReason(s.APIVersion, s.Kind); !ok || reason != s.Reason() || !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q (%v), Reason() %q; want one containing %q", reason, ok, s.Reason(), tc.reason)
			}
		})
	}
}

// skippedErrorCases: skipped kinds are still read as far as berth reads
// them; cluster-scoped ones are named without a namespace.
var skippedErrorCases = []struct {
	name, yaml string
	want       []string
}{
	{"cluster-scoped name has no namespace", "apiVersion: v1\nkind: Namespace\nmetadata: {name: Shop_1}\n",
		[]string{`app.yaml: Namespace Shop_1: metadata.name: Invalid value: "Shop_1"`}},
	{"missing name", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {labels: {a: b}}\n",
		[]string{`app.yaml: ClusterRole: metadata.name: Required value`}},
	{"generateName", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {generateName: web-}\n",
		[]string{`metadata.name: Required value: generateName is not supported`}},
	{"RBAC name is a path segment", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: a/b}\n",
		[]string{`Role default/a/b: metadata.name: Invalid value: "a/b": may not contain '/'`}},
	{"namespace is a DNS label", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web, namespace: Shop}\n",
		[]string{`ServiceAccount Shop/web: metadata.namespace: Invalid value: "Shop"`}},
	{"bad label", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, labels: {'a b': c}}\n",
		[]string{`PodDisruptionBudget default/web: metadata.labels: Invalid value: "a b"`}},
	{"metadata is strict", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, lables: {a: b}}\n",
		[]string{`Ingress default/web: unknown field "metadata.lables"`}},
	{"duplicate top-level field", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: {}\nspec: {}\n",
		[]string{`key "spec" already set`}},
	{"removed apiVersion", "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: web}\n",
		[]string{`Ingress default/web: unsupported apiVersion "extensions/v1beta1" for kind Ingress: want "networking.k8s.io/v1"`}},
	{"served versions listed", "apiVersion: autoscaling/v2beta2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n",
		[]string{`want "autoscaling/v2" or "autoscaling/v1"`}},
	{"missing apiVersion", "kind: Namespace\nmetadata: {name: shop}\n",
		[]string{`Namespace shop: missing "apiVersion" (want "v1")`}},
	{"a typo is still refused", "apiVersion: apps/v1\nkind: DaemonSetX\nmetadata: {name: web}\n",
		[]string{`app.yaml: DaemonSetX default/web: unsupported kind "DaemonSetX" (apiVersion "apps/v1"): berth reads only v1 Pod`,
			"and skips, with a warning, the cluster kinds it does not apply on one node (ClusterRole, ClusterRoleBinding, HorizontalPodAutoscaler, Ingress,"}},
	{"a custom resource is refused", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n",
		[]string{`ServiceMonitor default/web: unsupported kind "ServiceMonitor"`}},
}

// loadError decodes and validates manifests that must fail one or the
// other, and returns the error text.
func loadError(t *testing.T, manifests string) string {
	t.Helper()
	b, err := Decode(strings.NewReader(manifests), "app.yaml")
	if err == nil {
		err = b.Validate()
	}
	if err == nil {
		t.Fatal("decoded and validated")
	}
	return err.Error()
}

func TestSkippedKindErrors(t *testing.T) {
	for _, tc := range skippedErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got := loadError(t, tc.yaml)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("error\n%s\ndoes not contain %q", got, want)
				}
			}
			if strings.Contains(got, "default/shop") || strings.Contains(got, "default/Shop_1") {
				t.Errorf("a cluster-scoped object named with a namespace:\n%s", got)
			}
		})
	}
}

// A List may hold skipped kinds beside the ones berth reads; the same
// cluster object may come twice (each file of an app often carries its
// Namespace).
func TestSkippedInListAndTwice(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"List","items":[` +
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}},` +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}},` +
		`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"deny","namespace":"shop"},"spec":{"podSelector":{}}}]}`
	b := decodeString(t, list+"\n"+`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`, "list.json")
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range b.Skipped {
		got = append(got, s.Resource()+" "+ObjectKey(s.Namespace, s.Name))
	}
	want := []string{"namespace default/shop", "networkpolicy.networking.k8s.io shop/deny", "namespace default/shop"}
	if len(b.ConfigMaps) != 1 || !slices.Equal(got, want) {
		t.Errorf("%d configmaps, skipped %q; want 1 and %q", len(b.ConfigMaps), got, want)
	}
}

// The agent validates what a client sends: a skipped object of a kind
// berth reads, or does not know, is refused.
func TestValidateRefusesSkippedOfOtherKinds(t *testing.T) {
	b := &Bundle{Skipped: []*Skipped{
		{APIVersion: "v1", Kind: "Pod", ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Source: "-"},
		{APIVersion: "example.com/v1", Kind: "Widget", ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default"}, Source: "-"},
		{APIVersion: "v1", Kind: "Namespace", ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop"}, Source: "-"},
	}}
	err := b.Validate()
	if err == nil {
		t.Fatal("validated")
	}
	for _, want := range []string{"-: Pod default/web: kind Pod is read, not skipped", `-: Widget default/w: unsupported kind "Widget"`,
		"-: Namespace shop: metadata.namespace: Forbidden"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not contain %q", err, want)
		}
	}
	b.SetDefaults() // takes the namespace off the Namespace
	if b.Skipped[2].Namespace != "" {
		t.Errorf("SetDefaults left namespace %q on a Namespace", b.Skipped[2].Namespace)
	}
}

// The realistic application (as kubectl or Helm would apply it) loads:
// its Deployment and Service are read, its Namespace, ServiceAccount,
// Ingress, PodDisruptionBudget and HorizontalPodAutoscaler skipped.
func TestRealisticAppManifest(t *testing.T) {
	b, err := Load("testdata/realapp.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range b.Skipped {
		skipped = append(skipped, s.Resource()+"/"+s.Name)
	}
	want := []string{"namespace/shop", "serviceaccount/web", "ingress.networking.k8s.io/web", "poddisruptionbudget.policy/web", "horizontalpodautoscaler.autoscaling/web"}
	if len(b.Deployments) != 1 || len(b.Services) != 1 || !slices.Equal(skipped, want) {
		t.Errorf("%d deployments, %d services, skipped %q; want 1, 1, %q", len(b.Deployments), len(b.Services), skipped, want)
	}
	spec := b.Deployments[0].Spec.Template.Spec
	if spec.ServiceAccountName != "web" || spec.PriorityClassName != "high" || spec.Priority != nil {
		t.Errorf("template serviceAccountName %q, priorityClassName %q, priority %v; want web, high, none", spec.ServiceAccountName, spec.PriorityClassName, spec.Priority)
	}
}

// A directory of pods stays a directory of pods (watched) when it also
// holds skipped kinds: they are no workloads.
func TestSkippedKindsLeaveAPodDirectoryOfPods(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.yaml":  podYAML("a", "busybox"),
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Pods) != 1 || len(b.Skipped) != 2 || len(b.Workloads()) != 0 {
		t.Errorf("%d pods, %d skipped, %d workloads; want 1, 2, 0", len(b.Pods), len(b.Skipped), len(b.Workloads()))
	}
}
