package plan

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fixtures shared by the planner tests. Every scenario runs at now; instances are
// created minutes after t0, an hour before now.

var (
	t0  = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func at(minute int) time.Time { return t0.Add(time.Duration(minute) * time.Minute) }

// testHash stands in for podspec.ContainerHash: the image is enough to tell specs apart.
func testHash(c *v1.Container) string { return "h-" + c.Image }

func newPod(policy v1.RestartPolicy, init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: policy, InitContainers: init, Containers: containers},
	}
}

func ctr(name string) v1.Container {
	return v1.Container{Name: name, Image: "example/" + name + ":1"}
}

func side(name string) v1.Container {
	c := ctr(name)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func withStartupProbe(c v1.Container) v1.Container {
	c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	return c
}

func withLivenessProbe(c v1.Container) v1.Container {
	c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	return c
}

func inits(cs ...v1.Container) []v1.Container { return cs }

func sb(id string, attempt uint32, ready bool) Sandbox {
	s := Sandbox{ID: id, Attempt: attempt, Ready: ready, CreatedAt: at(int(attempt) * 10)}
	if ready {
		s.IP = "10.88.0.5"
	}
	return s
}

func sandboxes(s ...Sandbox) []Sandbox { return s }

func instance(id, sandbox, name string, state ContainerState, restarts, minute int) Container {
	return Container{
		ID: id, SandboxID: sandbox, Name: name, State: state, RestartCount: restarts,
		CreatedAt: at(minute), StartedAt: at(minute),
	}
}

func running(id, sandbox, name string, restarts, minute int) Container {
	return instance(id, sandbox, name, StateRunning, restarts, minute)
}

// exited finishes 30 s after it was created.
func exited(id, sandbox, name string, code int32, restarts, minute int) Container {
	c := instance(id, sandbox, name, StateExited, restarts, minute)
	c.ExitCode = code
	c.FinishedAt = c.StartedAt.Add(30 * time.Second)
	c.Reason = "Completed"
	if code != 0 {
		c.Reason = "Error"
	}
	return c
}

func oomKilled(c Container) Container {
	c.Reason = "OOMKilled"
	return c
}

func created(id, sandbox, name string, restarts, minute int) Container {
	c := instance(id, sandbox, name, StateCreated, restarts, minute)
	c.StartedAt = time.Time{}
	return c
}

func unknown(id, sandbox, name string, restarts, minute int) Container {
	return instance(id, sandbox, name, StateUnknown, restarts, minute)
}

func finishedAt(c Container, t time.Time) Container {
	c.FinishedAt = t
	return c
}

func withHash(c Container, hash string) Container {
	c.Hash = hash
	return c
}

// noHash marks an instance whose hash annotation is missing (completeObserved leaves
// it empty instead of filling it from the spec).
const noHash = "<none>"

func observed(s []Sandbox, cs ...Container) Observed {
	return Observed{Sandboxes: s, Containers: cs}
}

// completeObserved fills Type and Hash of instances that leave them empty, from the pod
// spec, as the agent's label parsing would.
func completeObserved(pod *v1.Pod, o Observed) Observed {
	out := Observed{Sandboxes: o.Sandboxes, Containers: append([]Container(nil), o.Containers...)}
	for i := range out.Containers {
		c := &out.Containers[i]
		if c.Type == "" {
			c.Type = specType(pod, c.Name)
		}
		switch spec := findSpec(pod, c.Name); {
		case c.Hash == noHash:
			c.Hash = ""
		case spec != nil && c.Hash == "":
			c.Hash = testHash(spec)
		}
	}
	return out
}

func findSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
