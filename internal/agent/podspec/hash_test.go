package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainerHash(t *testing.T) {
	build := func() *v1.Container {
		c := newContainer("app")
		c.Env = []v1.EnvVar{{Name: "A", Value: "1"}}
		c.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{
			v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourceCPU: resource.MustParse("1"),
		}}
		return &c
	}
	base := ContainerHash(build())
	if len(base) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", base)
	}
	for i := 0; i < 20; i++ { // map iteration order must not matter
		if h := ContainerHash(build()); h != base {
			t.Fatalf("same spec, different hash: %s vs %s", h, base)
		}
	}
	reordered := build()
	reordered.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	reordered.Resources.Limits[v1.ResourceMemory] = resource.MustParse("1Gi")
	if ContainerHash(reordered) != base {
		t.Error("map insertion order changed the hash")
	}
	changes := map[string]func(*v1.Container){
		"image":     func(c *v1.Container) { c.Image = "busybox:1.37" },
		"env":       func(c *v1.Container) { c.Env[0].Value = "2" },
		"command":   func(c *v1.Container) { c.Command = []string{"sh"} },
		"resources": func(c *v1.Container) { c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("2") },
	}
	for name, change := range changes {
		c := build()
		change(c)
		if ContainerHash(c) == base {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}
