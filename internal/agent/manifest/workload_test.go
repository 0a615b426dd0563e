package manifest

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: httpd
        image: busybox:1.36
`

func TestDecodeDeploymentDefaults(t *testing.T) {
	b := decodeString(t, deploymentYAML+"---\n"+strings.Replace(strings.Replace(deploymentYAML, "Deployment", "ReplicaSet", 1), "  replicas: 3\n", "", 1), "web.yaml")
	if len(b.Deployments) != 1 || len(b.ReplicaSets) != 1 {
		t.Fatalf("decoded %d deployments, %d replicasets; want 1 each", len(b.Deployments), len(b.ReplicaSets))
	}
	d := b.Deployments[0]
	ru := d.Spec.Strategy.RollingUpdate
	if d.Namespace != "default" || d.Source != "web.yaml" || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ru == nil || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Fatalf("Deployment defaults not set: %+v", d.Spec)
	}
	if spec := d.Spec.Template.Spec; spec.RestartPolicy != v1.RestartPolicyAlways || spec.Containers[0].ImagePullPolicy != v1.PullIfNotPresent {
		t.Fatalf("template defaults not set: %+v", spec)
	}
	if *b.ReplicaSets[0].Spec.Replicas != 1 {
		t.Fatalf("ReplicaSet replicas = %d, want the default 1", *b.ReplicaSets[0].Spec.Replicas)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("valid workloads refused: %v", err)
	}
	if err := b.Merge(decodeString(t, deploymentYAML, "again.yaml")); err == nil || !strings.Contains(err.Error(), "again.yaml: Deployment default/web: also defined in web.yaml") {
		t.Fatalf("a Deployment defined twice: %v", err)
	}
}

func TestValidateDeployment(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"selector required", "  selector:\n    matchLabels: {app: web}\n", "", "spec.selector: Required value"},
		{"selector must match", "matchLabels: {app: web}", "matchLabels: {app: other}", "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
		{"replicas not negative", "replicas: 3", "replicas: -1", "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"restartPolicy Always", "      containers:", "      restartPolicy: Never\n      containers:", `spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{"template checked as a pod", "name: httpd", "name: Bad_Name", "spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\""},
		{"both zero", "  template:", "  strategy:\n    rollingUpdate: {maxSurge: 0, maxUnavailable: 0%}\n  template:", "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0"},
		{"bad percent", "  template:", "  strategy:\n    rollingUpdate: {maxSurge: 25}\n  template:", ""},
		{"percent string", "  template:", "  strategy:\n    rollingUpdate: {maxSurge: \"x%\"}\n  template:", `spec.strategy.rollingUpdate.maxSurge: Invalid value: "x%": a valid percent string`},
		{"recreate has no rollingUpdate", "  template:", "  strategy:\n    type: Recreate\n    rollingUpdate: {maxSurge: 1}\n  template:", "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"},
		{"strategy type", "  template:", "  strategy:\n    type: BlueGreen\n  template:", `spec.strategy.type: Unsupported value: "BlueGreen"`},
		{"configMap reference", "      containers:", "      volumes: [{name: c, configMap: {name: missing}}]\n      containers:", "spec.template.spec.volumes[0].configMap.name: Not found: \"missing\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := decodeString(t, strings.Replace(deploymentYAML, tc.from, tc.to, 1), "web.yaml")
			err := b.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "web.yaml: Deployment default/web: "+tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestExampleDeploymentValidates(t *testing.T) {
	b, err := Load("../../../examples/deployment.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil || len(b.Deployments) != 1 {
		t.Fatalf("examples/deployment.yaml: %d deployments, %v", len(b.Deployments), err)
	}
}

func TestBundleWithout(t *testing.T) {
	b := &Bundle{}
	for _, src := range []string{"/d/a.yaml", "/d/b.yaml"} {
		one, err := decodeSource([]byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: `+strings.TrimSuffix(filepath.Base(src), ".yaml")+`}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: `+strings.TrimSuffix(filepath.Base(src), ".yaml")+`}
`), src)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Merge(one); err != nil {
			t.Fatal(err)
		}
	}
	out := b.Without([]string{"/d/a.yaml"})
	if len(out.Deployments) != 1 || out.Deployments[0].Name != "b" || len(out.ConfigMaps) != 1 || out.ConfigMaps["default/b"] == nil {
		t.Errorf("without a.yaml: %d deployments, configmaps %v; want b's only", len(out.Deployments), out.ConfigMaps)
	}
	if len(b.Deployments) != 2 || len(b.ConfigMaps) != 2 {
		t.Error("Without changed the bundle it was given")
	}
}
