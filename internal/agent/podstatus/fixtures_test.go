package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

var (
	t0  = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func at(minute int) time.Time { return t0.Add(time.Duration(minute) * time.Minute) }

func newPod(policy v1.RestartPolicy, init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: policy, InitContainers: init, Containers: containers},
	}
}

func ctr(name string) v1.Container { return v1.Container{Name: name, Image: "example/" + name + ":1"} }

func side(name string) v1.Container {
	c := ctr(name)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

var execProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}

func withReadiness(c v1.Container) v1.Container { c.ReadinessProbe = execProbe; return c }
func withStartup(c v1.Container) v1.Container   { c.StartupProbe = execProbe; return c }

func inits(cs ...v1.Container) []v1.Container { return cs }

func ready(id string) plan.Sandbox {
	return plan.Sandbox{ID: id, Ready: true, IP: "10.88.0.5", CreatedAt: at(0)}
}

func running(id, sandbox, name string, restarts, minute int) plan.Container {
	return plan.Container{
		ID: id, SandboxID: sandbox, Name: name, State: plan.StateRunning, RestartCount: restarts,
		CreatedAt: at(minute), StartedAt: at(minute),
	}
}

func exited(id, sandbox, name string, code int32, restarts, minute int) plan.Container {
	c := running(id, sandbox, name, restarts, minute)
	c.State, c.ExitCode, c.FinishedAt = plan.StateExited, code, at(minute).Add(30*time.Second)
	return c
}

func withState(c plan.Container, s plan.ContainerState) plan.Container {
	c.State = s
	return c
}

func observed(sb []plan.Sandbox, cs ...plan.Container) plan.Observed {
	return plan.Observed{Sandboxes: sb, Containers: cs}
}

func sandboxes(s ...plan.Sandbox) []plan.Sandbox { return s }

func input(pod *v1.Pod, obs plan.Observed) Input {
	return Input{Pod: pod, Observed: obs, HostIPs: []string{"192.168.1.10"}, Now: now}
}

func condition(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func containerStatus(list []v1.ContainerStatus, name string) v1.ContainerStatus {
	if st := findStatus(list, name); st != nil {
		return *st
	}
	return v1.ContainerStatus{}
}

func withPolicy(c v1.Container, policy v1.ContainerRestartPolicy) v1.Container {
	c.RestartPolicy = &policy
	return c
}

// withRule adds a rule with action on exit codes In values (and restartPolicy Never
// when the container has no restartPolicy yet).
func withRule(c v1.Container, action v1.ContainerRestartRuleAction, values ...int32) v1.Container {
	if c.RestartPolicy == nil {
		c = withPolicy(c, v1.ContainerRestartPolicyNever)
	}
	c.RestartPolicyRules = append(c.RestartPolicyRules, v1.ContainerRestartRule{
		Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: values},
	})
	return c
}
