package manifest

import "testing"

// examples/app loads as one bundle (the directory) and validates: the
// StatefulSet with its claim template and headless Service, the
// Deployment with its ConfigMap and Secret, the web Services.
func TestExampleAppValidates(t *testing.T) {
	b, err := Load("../../../examples/app", nil)
	if err != nil {
		t.Fatalf("examples/app: %v", err)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("examples/app: %v", err)
	}
	if len(b.StatefulSets) != 1 || len(b.Deployments) != 1 || len(b.Services) != 3 || len(b.ConfigMaps) != 1 || len(b.Secrets) != 1 {
		t.Errorf("examples/app: %d statefulsets, %d deployments, %d services, %d configmaps, %d secrets; want 1, 1, 3, 1, 1",
			len(b.StatefulSets), len(b.Deployments), len(b.Services), len(b.ConfigMaps), len(b.Secrets))
	}
}
