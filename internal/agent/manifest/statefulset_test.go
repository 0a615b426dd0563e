package manifest

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

const statefulSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 3
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: busybox:1.36
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
`

const pvcYAML = `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: scratch
spec:
  accessModes: [ReadWriteOncePod]
  storageClassName: fast
  resources:
    requests:
      storage: 10Mi
`

func TestDecodeStatefulSetAndClaimDefaults(t *testing.T) {
	b := decodeString(t, statefulSetYAML+"---\n"+pvcYAML, "db.yaml")
	if len(b.StatefulSets) != 1 || len(b.PersistentVolumeClaims) != 1 {
		t.Fatalf("decoded %d statefulsets, %d claims; want 1 each", len(b.StatefulSets), len(b.PersistentVolumeClaims))
	}
	s := b.StatefulSets[0].Spec
	if s.PodManagementPolicy != appsv1.OrderedReadyPodManagement || s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		*s.UpdateStrategy.RollingUpdate.Partition != 0 || s.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 ||
		*s.RevisionHistoryLimit != 10 || s.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*s.VolumeClaimTemplates[0].Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Fatalf("StatefulSet defaults not set: %+v", s)
	}
	if c := b.PersistentVolumeClaims[0]; c.Namespace != "default" || *c.Spec.VolumeMode != v1.PersistentVolumeFilesystem || *c.Spec.StorageClassName != "fast" {
		t.Fatalf("claim defaults: %+v", c.Spec)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("valid objects refused (the template mounts its claim template): %v", err)
	}
}

func TestValidateStatefulSetAndClaim(t *testing.T) {
	cases := []struct {
		name, doc, from, to, want string
	}{
		{"policy", statefulSetYAML, "  serviceName: db\n", "  serviceName: db\n  podManagementPolicy: Random\n", `db.yaml: StatefulSet default/db: spec.podManagementPolicy: Unsupported value: "Random"`},
		{"strategy", statefulSetYAML, "  serviceName: db\n", "  serviceName: db\n  updateStrategy: {type: OnDelete, rollingUpdate: {partition: 1}}\n", "spec.updateStrategy.rollingUpdate: Invalid value"},
		{"partition", statefulSetYAML, "  serviceName: db\n", "  serviceName: db\n  updateStrategy: {rollingUpdate: {partition: -1}}\n", "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1"},
		{"maxUnavailable", statefulSetYAML, "  serviceName: db\n", "  serviceName: db\n  updateStrategy: {rollingUpdate: {maxUnavailable: 0}}\n", "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": must be greater than 0"},
		{"retention", statefulSetYAML, "  serviceName: db\n", "  serviceName: db\n  persistentVolumeClaimRetentionPolicy: {whenScaled: Keep}\n", `spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep"`},
		{"template restartPolicy", statefulSetYAML, "      containers:\n", "      restartPolicy: Never\n      containers:\n", `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
		{"claim template size", statefulSetYAML, "          storage: 1Gi\n", "          cpu: 1\n", "spec.volumeClaimTemplates[0].spec.resources.requests[storage]: Required value"},
		{"mount of nothing", statefulSetYAML, "{name: data,", "{name: logs,", `spec.template.spec.containers[0].volumeMounts[0].name: Not found: "logs"`},
		{"name length", statefulSetYAML, "  name: db\n", "  name: " + strings.Repeat("d", 53) + "\n", "metadata.name: Too long"},
		{"access modes", pvcYAML, "  accessModes: [ReadWriteOncePod]\n", "", "db.yaml: PersistentVolumeClaim default/scratch: spec.accessModes: Required value: at least 1 access mode is required"},
		{"RWOP alone", pvcYAML, "[ReadWriteOncePod]", "[ReadWriteOncePod, ReadWriteOnce]", "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"},
		{"size", pvcYAML, "storage: 10Mi", "storage: 0", "spec.resources.requests[storage]: Invalid value: \"0\": must be greater than zero"},
		{"block", pvcYAML, "  storageClassName: fast\n", "  volumeMode: Block\n", `spec.volumeMode: Unsupported value: "Block": berth's claims are local directories; block volumes are not supported`},
		{"selector", pvcYAML, "  storageClassName: fast\n", "  selector: {matchLabels: {a: b}}\n", "spec.selector: Forbidden"},
		{"reclaim policy", pvcYAML, "  name: scratch\n", "  name: scratch\n  annotations: {berth.dev/reclaim-policy: Recycle}\n", `metadata.annotations[berth.dev/reclaim-policy]: Unsupported value: "Recycle"`},
		{"dataSource", pvcYAML, "  storageClassName: fast\n", "  dataSource: {kind: PersistentVolumeClaim, name: other}\n", "spec.dataSource: Forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(tc.doc, tc.from, tc.to, 1)
			if doc == tc.doc {
				t.Fatalf("%q not in the manifest", tc.from)
			}
			b := decodeString(t, doc, "db.yaml")
			err := b.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestExampleStatefulSetIsValid(t *testing.T) {
	b, err := Load("../../../examples/statefulset.yaml", nil)
	if err != nil || len(b.StatefulSets) != 1 || len(b.PersistentVolumeClaims) != 1 || len(b.Pods) != 1 {
		t.Fatalf("examples/statefulset.yaml: %v", err)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("examples/statefulset.yaml: %v", err)
	}
}

// A claim may set berth's reclaim-policy annotation (Delete or Retain),
// though berth.dev/ keys are otherwise refused; a claim template too.
func TestClaimReclaimPolicyAnnotationIsAccepted(t *testing.T) {
	for _, policy := range []string{"Retain", "Delete"} {
		doc := strings.Replace(pvcYAML, "  name: scratch\n", "  name: scratch\n  annotations: {berth.dev/reclaim-policy: "+policy+"}\n", 1)
		if err := decodeString(t, doc, "db.yaml").Validate(); err != nil {
			t.Errorf("a claim with reclaim policy %s: %v", policy, err)
		}
	}
	doc := strings.Replace(pvcYAML, "  name: scratch\n", "  name: scratch\n  annotations: {berth.dev/watch-dir: /tmp}\n", 1)
	if err := decodeString(t, doc, "db.yaml").Validate(); err == nil || !strings.Contains(err.Error(), "metadata.annotations[berth.dev/watch-dir]: Invalid value") {
		t.Errorf("a claim with another berth.dev/ key: %v; want it refused", err)
	}
}
