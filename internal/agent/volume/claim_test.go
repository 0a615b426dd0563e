package volume

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

type fakeClaims map[string]string

func (f fakeClaims) ClaimPath(pod *v1.Pod, name string) (string, error) {
	if p, ok := f[pod.Namespace+"/"+name]; ok {
		return p, nil
	}
	return "", errors.New(`persistentvolumeclaim "` + name + `" not found`)
}

func TestClaimVolumes(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u-claim"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "db", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "gone", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "later"}}},
	}}}
	m := &Manager{Root: t.TempDir(), Claims: fakeClaims{"default/data": "/claims/volumes/pvc-1"}}
	t.Cleanup(func() { _ = m.Teardown("u-claim") })
	paths, err := m.Setup(context.Background(), pod, podspec.Sources{}, podspec.Downward{})
	if paths["db"] != "/claims/volumes/pvc-1" {
		t.Errorf("claim volume at %q; want the claim's directory", paths["db"])
	}
	if err == nil || !strings.Contains(err.Error(), `volume "gone": persistentvolumeclaim "later" not found`) {
		t.Errorf("a missing claim: %v", err)
	}
	m.Claims = nil
	if _, err := m.Setup(context.Background(), pod, podspec.Sources{}, podspec.Downward{}); err == nil || !strings.Contains(err.Error(), "claims store") {
		t.Errorf("no claims store: %v", err)
	}
}
