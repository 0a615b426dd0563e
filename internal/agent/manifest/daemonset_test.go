package manifest

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

const daemonSetYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: busybox:1.36
`

func TestDecodeDaemonSetDefaults(t *testing.T) {
	b := decodeString(t, daemonSetYAML, "ds.yaml")
	if len(b.DaemonSets) != 1 || len(b.Workloads()) != 1 || b.Empty() {
		t.Fatalf("decoded %d daemonsets", len(b.DaemonSets))
	}
	ds := b.DaemonSets[0]
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Namespace != "default" || ds.Source != "ds.yaml" || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType ||
		ru == nil || ru.MaxUnavailable.String() != "1" || ru.MaxSurge.String() != "0" || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("DaemonSet defaults not set: %+v", ds.Spec)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("valid DaemonSet refused: %v", err)
	}
	if err := b.Merge(decodeString(t, daemonSetYAML, "again.yaml")); err == nil || !strings.Contains(err.Error(), "again.yaml: DaemonSet default/agent: also defined in ds.yaml") {
		t.Fatalf("a DaemonSet defined twice: %v", err)
	}
}

func TestValidateDaemonSet(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"selector required", "  selector:\n    matchLabels: {app: agent}\n", "", "spec.selector: Required value"},
		{"selector must match", "matchLabels: {app: agent}", "matchLabels: {app: other}", "spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`"},
		{"restartPolicy Always", "      containers:", "      restartPolicy: OnFailure\n      containers:", `spec.template.spec.restartPolicy: Unsupported value: "OnFailure"`},
		{"strategy type", "  template:", "  updateStrategy:\n    type: Recreate\n  template:", `spec.updateStrategy.type: Unsupported value: "Recreate"`},
		{"OnDelete", "  template:", "  updateStrategy:\n    type: OnDelete\n  template:", ""},
		{"surge alone keeps maxUnavailable 1", "  template:", "  updateStrategy:\n    rollingUpdate: {maxSurge: 1}\n  template:", "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"1\": may not be set when maxUnavailable is non-zero"},
		{"surge", "  template:", "  updateStrategy:\n    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}\n  template:", ""},
		{"both zero", "  template:", "  updateStrategy:\n    rollingUpdate: {maxSurge: 0, maxUnavailable: 0}\n  template:", "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"},
		{"over 100%", "  template:", "  updateStrategy:\n    rollingUpdate: {maxUnavailable: 150%}\n  template:", "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"},
		{"minReadySeconds", "  template:", "  minReadySeconds: -1\n  template:", "spec.minReadySeconds: Invalid value: -1"},
		{"template checked as a pod", "name: agent\n        image", "name: Bad_Name\n        image", "spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeString(t, strings.Replace(daemonSetYAML, tc.from, tc.to, 1), "ds.yaml").Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "ds.yaml: DaemonSet default/agent: "+tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestExampleDaemonSetValidates(t *testing.T) {
	b, err := Load("../../../examples/daemonset.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil || len(b.DaemonSets) != 1 {
		t.Fatalf("examples/daemonset.yaml: %d daemonsets, %v", len(b.DaemonSets), err)
	}
}
