package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// probeKind is a probe's field name in a container.
type probeKind string

const (
	livenessProbe  probeKind = "livenessProbe"
	readinessProbe probeKind = "readinessProbe"
	startupProbe   probeKind = "startupProbe"
)

// validateProbesAndHooks checks the lifecycle hooks and the three probes of
// a regular container or a sidecar.
func validateProbesAndHooks(pod *podContext, c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		for _, hook := range []struct {
			name    string
			handler *v1.LifecycleHandler
		}{{"postStart", c.Lifecycle.PostStart}, {"preStop", c.Lifecycle.PreStop}} {
			if hook.handler != nil {
				h := actionHandler{exec: hook.handler.Exec, httpGet: hook.handler.HTTPGet, tcpSocket: hook.handler.TCPSocket, sleep: hook.handler.Sleep}
				errs = append(errs, h.validate(c, pod.spec.TerminationGracePeriodSeconds, path.Child("lifecycle", hook.name))...)
			}
		}
	}
	errs = append(errs, validateProbe(c, c.LivenessProbe, livenessProbe, path)...)
	errs = append(errs, validateProbe(c, c.ReadinessProbe, readinessProbe, path)...)
	return append(errs, validateProbe(c, c.StartupProbe, startupProbe, path)...)
}

// validateProbe checks one probe of container c: one handler; timings
// positive once defaulted; a liveness or startup probe succeeds after
// exactly one success; only those may override the pod's grace period.
func validateProbe(c *v1.Container, probe *v1.Probe, kind probeKind, containerPath *field.Path) field.ErrorList {
	if probe == nil {
		return nil
	}
	path := containerPath.Child(string(kind))
	h := actionHandler{exec: probe.Exec, httpGet: probe.HTTPGet, tcpSocket: probe.TCPSocket, grpc: probe.GRPC}
	errs := h.validate(c, nil, path)
	if probe.InitialDelaySeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("initialDelaySeconds"), probe.InitialDelaySeconds, "must be greater than or equal to 0"))
	}
	for _, timing := range []struct {
		name  string
		value int32
	}{
		{"timeoutSeconds", probe.TimeoutSeconds}, {"periodSeconds", probe.PeriodSeconds},
		{"successThreshold", probe.SuccessThreshold}, {"failureThreshold", probe.FailureThreshold},
	} {
		if timing.value < 1 {
			errs = append(errs, field.Invalid(path.Child(timing.name), timing.value, "must be greater than or equal to 1"))
		}
	}
	if kind != readinessProbe && probe.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if grace := probe.TerminationGracePeriodSeconds; grace != nil {
		gracePath := path.Child("terminationGracePeriodSeconds")
		if kind == readinessProbe {
			errs = append(errs, field.Invalid(gracePath, *grace, "must not be set for readinessProbes"))
		} else if *grace <= 0 {
			errs = append(errs, field.Invalid(gracePath, *grace, "must be greater than 0"))
		}
	}
	return errs
}

// actionHandler is what a probe or a lifecycle hook does; exactly one field
// is set. Probes have no sleep, hooks no grpc.
type actionHandler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction
	sleep     *v1.SleepAction
}

// validate checks the handler of container c; grace is the pod's
// termination grace period, which bounds a sleep.
func (h actionHandler) validate(c *v1.Container, grace *int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	if h.exec != nil {
		set = append(set, "exec")
		if len(h.exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if h.httpGet != nil {
		set = append(set, "httpGet")
		errs = append(errs, validateHTTPGet(c, h.httpGet, path.Child("httpGet"))...)
	}
	if h.tcpSocket != nil {
		set = append(set, "tcpSocket")
		errs = append(errs, validateProbePort(c, h.tcpSocket.Port, path.Child("tcpSocket", "port"))...)
	}
	if h.grpc != nil {
		set = append(set, "grpc")
		errs = append(errs, invalidEach(path.Child("grpc", "port"), h.grpc.Port, validation.IsValidPortNum(int(h.grpc.Port)))...)
	}
	if h.sleep != nil {
		set = append(set, "sleep")
		if grace != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *grace) {
			msg := fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace)
			errs = append(errs, field.Invalid(path.Child("sleep"), h.sleep.Seconds, msg))
		}
	}
	if len(set) == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	for _, extra := range set[min(1, len(set)):] {
		errs = append(errs, field.Forbidden(path.Child(extra), "may not specify more than 1 handler type"))
	}
	return errs
}

var supportedSchemes = []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}

func validateHTTPGet(c *v1.Container, action *v1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if action.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validateProbePort(c, action.Port, path.Child("port"))...)
	errs = append(errs, validateEnum(path.Child("scheme"), action.Scheme, supportedSchemes...)...)
	for i, header := range action.HTTPHeaders {
		errs = append(errs, invalidEach(path.Child("httpHeaders").Index(i).Child("name"), header.Name, validation.IsHTTPHeaderName(header.Name))...)
	}
	return errs
}

// validateProbePort checks a port given by number or by name; a name must
// be one of container c's ports, or the kubelet could never resolve it.
func validateProbePort(c *v1.Container, port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return invalidEach(path, port.IntValue(), validation.IsValidPortNum(port.IntValue()))
	}
	if msgs := validation.IsValidPortName(port.StrVal); len(msgs) > 0 {
		return invalidEach(path, port.StrVal, msgs)
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return nil
		}
	}
	err := field.NotFound(path, port.StrVal)
	err.Detail = fmt.Sprintf("container %q has no port of that name", c.Name)
	return field.ErrorList{err}
}
