package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// rule is a restart rule on exit codes In values.
func rule(action v1.ContainerRestartRuleAction, values ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{
		Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: values,
	}}
}

// The API server's checks of container restart rules (1.37: ContainerRestartRules
// and RestartAllContainersOnContainerExits on), with their field paths.
func TestValidateContainerRestartRules(t *testing.T) {
	restart, all := v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleAction("RestartAllContainers")
	never := v1.ContainerRestartPolicyNever
	runPodCases(t, []podCase{
		{"restartPolicy on a regular container", "", func(p *v1.Pod) { app(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicyOnFailure) }, ""},
		{"unknown restartPolicy", "", func(p *v1.Pod) { app(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicy("Sometimes")) },
			`spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`},
		{"rules on a regular container", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			app(p).RestartPolicyRules = []v1.ContainerRestartRule{rule(restart, 42), rule(all, 43)}
		}, ""},
		{"rules without restartPolicy", "", func(p *v1.Pod) { app(p).RestartPolicyRules = []v1.ContainerRestartRule{rule(restart, 42)} },
			"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"},
		{"unknown action", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			app(p).RestartPolicyRules = []v1.ContainerRestartRule{rule("Pause", 1)}
		}, `spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Pause": supported values: "Restart", "RestartAllContainers"`},
		{"unknown operator", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			r := rule(restart, 1)
			r.ExitCodes.Operator = "Between"
			app(p).RestartPolicyRules = []v1.ContainerRestartRule{r}
		}, `spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn"`},
		{"rule without exitCodes", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			app(p).RestartPolicyRules = []v1.ContainerRestartRule{{Action: restart}}
		}, "spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified"},
		{"too many values", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			r := rule(restart)
			for i := range 256 {
				r.ExitCodes.Values = append(r.ExitCodes.Values, int32(i))
			}
			app(p).RestartPolicyRules = []v1.ContainerRestartRule{r}
		}, "spec.containers[0].restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items"},
		{"too many rules", "", func(p *v1.Pod) {
			app(p).RestartPolicy = &never
			for i := range 21 {
				app(p).RestartPolicyRules = append(app(p).RestartPolicyRules, rule(restart, int32(i)))
			}
		}, "spec.containers[0].restartPolicyRules: Too many: 21: must have at most 20 items"},
		{"init container with restartPolicy Never and rules", "", func(p *v1.Pod) {
			initConfig(p).RestartPolicy = &never
			initConfig(p).RestartPolicyRules = []v1.ContainerRestartRule{rule(all, 42)}
		}, ""},
		{"init container rules without restartPolicy", "", func(p *v1.Pod) { initConfig(p).RestartPolicyRules = []v1.ContainerRestartRule{rule(restart, 42)} },
			"spec.initContainers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"},
		{"init container with an unknown restartPolicy", "", func(p *v1.Pod) { initConfig(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicy("Later")) },
			`spec.initContainers[0].restartPolicy: Unsupported value: "Later": supported values: "Always", "Never", "OnFailure"`},
		{"sidecar with a RestartAllContainers rule", "", func(p *v1.Pod) { shipper(p).RestartPolicyRules = []v1.ContainerRestartRule{rule(all, 42)} }, ""},
		{"init container with restartPolicy Never keeps the plain init rules", "", func(p *v1.Pod) {
			initConfig(p).RestartPolicy = &never
			initConfig(p).ReadinessProbe = shipper(p).ReadinessProbe
		}, "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"sidecar turned Never loses its probes", "", func(p *v1.Pod) { shipper(p).RestartPolicy = &never },
			"spec.initContainers[1].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
	})
}

func TestEphemeralContainerRestartRulesForbidden(t *testing.T) {
	b := decodeString(t, webManifests, "pod.yaml")
	pod := onlyPod(t, b)
	ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(extraContainer("debugger"))}
	ec.RestartPolicyRules = []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, 1)}
	err := ValidateEphemeralContainersUpdate(pod, []v1.EphemeralContainer{ec})
	want := "spec.ephemeralContainers[0].restartPolicyRules: Forbidden: cannot be set for an Ephemeral Container"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v; want %q", err, want)
	}
}
