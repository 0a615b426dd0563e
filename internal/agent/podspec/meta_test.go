package podspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestSandboxMetaRoundTrip(t *testing.T) {
	pod := newPod(newContainer("a"))
	refs := SourceRefs{ConfigMaps: []SourceRef{{Name: "cfg", Digest: "d1"}}, Secrets: []SourceRef{{Name: "creds", Digest: "d2"}}}
	seen := time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
	cfg, err := SandboxConfig(pod, 2, refs, SandboxOptions{ConfigSeen: seen})
	if err != nil {
		t.Fatal(err)
	}
	if !IsAgentOwned(cfg.Labels) {
		t.Error("sandbox lacks the agent label")
	}
	meta, err := ParseSandboxMeta(cfg.Labels, cfg.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if meta.PodRef != (PodRef{Name: "web", Namespace: "shop", UID: "uid-1"}) {
		t.Errorf("ref %+v", meta.PodRef)
	}
	if !reflect.DeepEqual(meta.Pod, pod) {
		t.Errorf("pod did not round-trip:\n%+v\n%+v", meta.Pod, pod)
	}
	if !reflect.DeepEqual(meta.SourceRefs, refs) {
		t.Errorf("source refs did not round-trip: %+v", meta.SourceRefs)
	}
	if _, found := cfg.Annotations[AnnotationSources]; found {
		t.Errorf("the sandbox carries the sources themselves")
	}
	if !meta.ConfigSeen.Equal(seen) || meta.ConfigSource != "file" {
		t.Errorf("seen %v source %q", meta.ConfigSeen, meta.ConfigSource)
	}
}

func TestContainerMetaRoundTrip(t *testing.T) {
	for _, typ := range []ContainerType{ContainerTypeInit, ContainerTypeSidecar, ContainerTypeRegular, ContainerTypeEphemeral} {
		c := newContainer("app")
		c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
		c.Ports = []v1.ContainerPort{{ContainerPort: 80}}
		pod := newPod(c)
		cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], typ, 7, ContainerOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := ParseContainerMeta(cfg.Labels, cfg.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		want := ContainerMeta{
			PodRef: PodRef{Name: "web", Namespace: "shop", UID: "uid-1"},
			Name:   "app", Type: typ, RestartCount: 7, Hash: ContainerHash(&pod.Spec.Containers[0]),
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		}
		if meta != want {
			t.Errorf("%s: got %+v, want %+v", typ, meta, want)
		}
	}
}

func TestParseMetaErrors(t *testing.T) {
	pod := newPod(newContainer("app"))
	sb, _ := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{})
	ctr, _ := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, ContainerOptions{}, nil)
	without := func(m map[string]string, key string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	with := func(m map[string]string, key, value string) map[string]string {
		out := without(m, key)
		out[key] = value
		return out
	}
	sandboxCases := map[string][2]map[string]string{
		LabelPodUID:                          {without(sb.Labels, LabelPodUID), sb.Annotations},
		AnnotationPod:                        {sb.Labels, without(sb.Annotations, AnnotationPod)},
		AnnotationPod + " malformed":         {sb.Labels, with(sb.Annotations, AnnotationPod, "{")},
		AnnotationPod + " uid":               {with(sb.Labels, LabelPodUID, "other"), sb.Annotations},
		AnnotationSources + " malformed":     {sb.Labels, with(sb.Annotations, AnnotationSources, "[")},
		AnnotationConfigSeen + " malformed":  {sb.Labels, with(sb.Annotations, AnnotationConfigSeen, "yesterday")},
		LabelPodName + " (labels nil)":       {nil, nil},
		AnnotationPod + " (annotations nil)": {sb.Labels, nil},
	}
	for name, in := range sandboxCases {
		_, err := ParseSandboxMeta(in[0], in[1])
		if err == nil || !strings.Contains(err.Error(), strings.Fields(name)[0]) {
			t.Errorf("sandbox %s: error %v should name it", name, err)
		}
	}
	containerCases := map[string][2]map[string]string{
		LabelContainerName:                {without(ctr.Labels, LabelContainerName), ctr.Annotations},
		LabelPodNamespace:                 {without(ctr.Labels, LabelPodNamespace), ctr.Annotations},
		AnnotationContainerType:           {ctr.Labels, with(ctr.Annotations, AnnotationContainerType, "daemon")},
		AnnotationContainerHash:           {ctr.Labels, without(ctr.Annotations, AnnotationContainerHash)},
		AnnotationRestartCount:            {ctr.Labels, with(ctr.Annotations, AnnotationRestartCount, "x")},
		AnnotationRestartCount + " neg":   {ctr.Labels, with(ctr.Annotations, AnnotationRestartCount, "-1")},
		AnnotationRestartCount + " unset": {ctr.Labels, without(ctr.Annotations, AnnotationRestartCount)},
	}
	for name, in := range containerCases {
		_, err := ParseContainerMeta(in[0], in[1])
		if err == nil || !strings.Contains(err.Error(), strings.Fields(name)[0]) {
			t.Errorf("container %s: error %v should name it", name, err)
		}
	}
}

// A pod carrying berth's own keys (validation refuses them) does not get
// them into the sandbox: the agent would read them back as its own.
func TestSandboxMetaLeavesOutReservedKeys(t *testing.T) {
	pod := newPod(newContainer("a"))
	pod.Labels = map[string]string{"app": "web", "berth.dev/agent": "false", "io.kubernetes.pod.uid": "other", "x.berth.dev/y": "z"}
	pod.Annotations = map[string]string{"note": "kept", "berth.dev/watch-dir": "/tmp", "Berth.dev/Sources": "{}", "kubernetes.io/config.hash": "h"}
	cfg, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Labels["app"] != "web" || cfg.Annotations["note"] != "kept" {
		t.Errorf("the pod's own keys are lost: %v %v", cfg.Labels, cfg.Annotations)
	}
	if cfg.Labels[LabelAgent] != "true" || cfg.Labels[LabelPodUID] != "uid-1" || cfg.Labels["x.berth.dev/y"] != "" {
		t.Errorf("labels %v", cfg.Labels)
	}
	for _, key := range []string{"berth.dev/watch-dir", "Berth.dev/Sources", "kubernetes.io/config.hash"} {
		if v, found := cfg.Annotations[key]; found {
			t.Errorf("annotation %s = %q copied from the pod", key, v)
		}
	}
}

// A sandbox made before the agent kept the sources in its store carries
// them in AnnotationSources: they are read back once, at recovery.
func TestSandboxMetaReadsLegacySources(t *testing.T) {
	pod := newPod(newContainer("a"))
	cfg, err := SandboxConfig(pod, 0, SourceRefs{}, SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := json.Marshal(testSources())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Annotations[AnnotationSources] = string(legacy)
	meta, err := ParseSandboxMeta(cfg.Labels, cfg.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta.LegacySources, testSources()) {
		t.Errorf("legacy sources %+v", meta.LegacySources)
	}
	cfg.Annotations[AnnotationSourceRefs] = "{"
	if _, err := ParseSandboxMeta(cfg.Labels, cfg.Annotations); err == nil || !strings.Contains(err.Error(), AnnotationSourceRefs) {
		t.Errorf("malformed refs: %v", err)
	}
}
