package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testSources() Sources {
	return Sources{
		ConfigMaps: []v1.ConfigMap{{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop"},
			Data:       map[string]string{"LEVEL": "debug", "MODE": "fast", "bad=key": "x", "": "y"},
		}},
		Secrets: []v1.Secret{{
			ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop"},
			Data:       map[string][]byte{"USER": []byte("admin"), "PASS": []byte("s3cret")},
			StringData: map[string]string{"TOKEN": "tok"},
		}},
	}
}

func envOf(t *testing.T, c v1.Container) Env {
	t.Helper()
	pod := newPod(c)
	env, err := ResolveEnv(pod, &pod.Spec.Containers[0], testSources(), Downward{
		PodIPs: []string{"10.0.0.5", "fd00::5"}, HostIPs: []string{"192.168.1.2"},
		Allocatable: Allocatable{MilliCPU: 4000, MemoryBytes: 8 << 30, EphemeralStorageBytes: 100 << 30},
	})
	if err != nil {
		t.Fatalf("ResolveEnv: %v", err)
	}
	return env
}

func fieldEnv(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
}

func TestResolveEnvValuesAndExpansion(t *testing.T) {
	c := newContainer("app")
	c.Env = []v1.EnvVar{
		{Name: "A", Value: "a"},
		{Name: "B", Value: "$(A)-b"},
		{Name: "C", Value: "$(B)/$(LATER)/$$(A)"},
		{Name: "LATER", Value: "late"},
		{Name: "FROM_ENVFROM", Value: "$(LEVEL)"},
		{Name: "EMPTY"},
	}
	c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	env := envOf(t, c)
	want := map[string]string{
		"A": "a", "B": "a-b", "C": "a-b/$(LATER)/$(A)", "LATER": "late",
		"FROM_ENVFROM": "debug", "EMPTY": "", "LEVEL": "debug", "MODE": "fast",
	}
	assertEnv(t, env, want)
}

func TestResolveEnvOrderAndOverride(t *testing.T) {
	c := newContainer("app")
	c.EnvFrom = []v1.EnvFromSource{
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
		{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
	}
	c.Env = []v1.EnvVar{{Name: "MODE", Value: "slow"}, {Name: "Z", Value: "z"}}
	env := envOf(t, c)
	var names []string
	for _, v := range env.Vars {
		names = append(names, v.Name)
	}
	if got, want := strings.Join(names, ","), "LEVEL,MODE,S_PASS,S_TOKEN,S_USER,Z"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	assertEnv(t, env, map[string]string{
		"LEVEL": "debug", "MODE": "slow", "S_PASS": "s3cret", "S_TOKEN": "tok", "S_USER": "admin", "Z": "z",
	})
	if got := strings.Join(env.SkippedKeys, ","); got != ",bad=key" {
		t.Errorf("skipped keys %q, want the empty key and bad=key", got)
	}
}

func TestResolveEnvValueFrom(t *testing.T) {
	c := newContainer("app")
	c.Resources = resources("250m", "64Mi", "", "128Mi")
	c.Env = []v1.EnvVar{
		fieldEnv("NAME", "metadata.name"),
		fieldEnv("NS", "metadata.namespace"),
		fieldEnv("UID", "metadata.uid"),
		fieldEnv("APP", "metadata.labels['app']"),
		fieldEnv("NOTE", "metadata.annotations['note']"),
		fieldEnv("LABELS", "metadata.labels"),
		fieldEnv("NODE", "spec.nodeName"),
		fieldEnv("SA", "spec.serviceAccountName"),
		fieldEnv("IP", "status.podIP"),
		fieldEnv("IPS", "status.podIPs"),
		fieldEnv("HOST", "status.hostIP"),
		fieldEnv("HOSTS", "status.hostIPs"),
		{Name: "CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
		{Name: "SEC", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "PASS"}}},
		{Name: "SEC_STRING", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "TOKEN"}}},
		resourceEnv("REQ_CPU", "requests.cpu", ""),
		resourceEnv("REQ_CPU_M", "requests.cpu", "1m"),
		resourceEnv("LIM_CPU", "limits.cpu", ""),
		resourceEnv("LIM_MEM_MI", "limits.memory", "1Mi"),
		resourceEnv("REQ_MEM", "requests.memory", ""),
		resourceEnv("LIM_EPH_GI", "limits.ephemeral-storage", "1Gi"),
	}
	assertEnv(t, envOf(t, c), map[string]string{
		"NAME": "web", "NS": "shop", "UID": "uid-1", "APP": "web", "NOTE": "x",
		"LABELS": "app=\"web\"\ntier=\"front\"", "NODE": "node-a", "SA": "sa",
		"IP": "10.0.0.5", "IPS": "10.0.0.5,fd00::5", "HOST": "192.168.1.2", "HOSTS": "192.168.1.2",
		"CM": "debug", "SEC": "s3cret", "SEC_STRING": "tok",
		"REQ_CPU": "1", "REQ_CPU_M": "250", "LIM_CPU": "4", // no cpu limit: node allocatable
		"LIM_MEM_MI": "128", "REQ_MEM": "67108864", "LIM_EPH_GI": "100",
	})
}

func resourceEnv(name, res, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

func TestResolveEnvOptionalReferences(t *testing.T) {
	optional := ptr(true)
	c := newContainer("app")
	c.EnvFrom = []v1.EnvFromSource{
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: optional}},
		{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: optional}},
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
	}
	c.Env = []v1.EnvVar{
		{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "nokey", Optional: optional}}},
		{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: optional}}},
		{Name: "Y", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "nokey", Optional: optional}}},
		{Name: "Z", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: optional}}},
	}
	// MODE keeps the envFrom value: a missing optional key leaves the
	// variable out rather than blanking it.
	assertEnv(t, envOf(t, c), map[string]string{"LEVEL": "debug", "MODE": "fast"})
}

func TestResolveEnvRequiredReferenceErrors(t *testing.T) {
	cases := []struct {
		name string
		c    func(*v1.Container)
		want []string
	}{
		{"configmap missing", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k"}}}}
		}, []string{`container "app"`, `env "V"`, `configMap "absent" not found`}},
		{"configmap key missing", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "nokey", Optional: ptr(false)}}}}
		}, []string{`env "V"`, `has no key "nokey"`}},
		{"secret missing", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k"}}}}
		}, []string{`env "V"`, `secret "absent" not found`}},
		{"secret key missing", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "nokey"}}}}
		}, []string{`env "V"`, `secret "creds" has no key "nokey"`}},
		{"envFrom configmap missing", func(c *v1.Container) {
			c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}}
		}, []string{`envFrom[0]`, `configMap "absent" not found`}},
		{"envFrom secret missing", func(c *v1.Container) {
			c.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}}
		}, []string{`secret "absent" not found`}},
		{"bad field path", func(c *v1.Container) { c.Env = []v1.EnvVar{fieldEnv("V", "spec.nope")} }, []string{`env "V"`, "unsupported field path"}},
		{"subscript on name", func(c *v1.Container) { c.Env = []v1.EnvVar{fieldEnv("V", "metadata.name['x']")} }, []string{"takes no subscript"}},
		{"bad resource", func(c *v1.Container) { c.Env = []v1.EnvVar{resourceEnv("V", "limits.gpu", "")} }, []string{"unsupported resource"}},
		{"unknown container", func(c *v1.Container) {
			e := resourceEnv("V", "limits.cpu", "")
			e.ValueFrom.ResourceFieldRef.ContainerName = "ghost"
			c.Env = []v1.EnvVar{e}
		}, []string{`no container named "ghost"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newContainer("app")
			tc.c(&c)
			pod := newPod(c)
			_, err := ResolveEnv(pod, &pod.Spec.Containers[0], testSources(), Downward{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestResourceFieldRefOfOtherContainer(t *testing.T) {
	side := newContainer("side")
	side.Resources = resources("", "", "1500m", "")
	app := newContainer("app")
	e := resourceEnv("SIDE_CPU", "limits.cpu", "")
	e.ValueFrom.ResourceFieldRef.ContainerName = "side"
	app.Env = []v1.EnvVar{e}
	pod := newPod(app, side)
	env, err := ResolveEnv(pod, &pod.Spec.Containers[0], Sources{}, Downward{})
	if err != nil {
		t.Fatal(err)
	}
	assertEnv(t, env, map[string]string{"SIDE_CPU": "2"}) // 1.5 rounded up
}

func assertEnv(t *testing.T, env Env, want map[string]string) {
	t.Helper()
	if len(env.Vars) != len(want) {
		t.Errorf("got %d vars %v, want %d", len(env.Vars), env.Vars, len(want))
	}
	for name, value := range want {
		got, ok := env.Lookup(name)
		if !ok {
			t.Errorf("%s missing", name)
		} else if got != value {
			t.Errorf("%s = %q, want %q", name, got, value)
		}
	}
}
