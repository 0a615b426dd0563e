package manifest

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// app is the regular container of webManifests; shipper its sidecar and
// initConfig its plain init container.
func app(p *v1.Pod) *v1.Container        { return &p.Spec.Containers[0] }
func shipper(p *v1.Pod) *v1.Container    { return &p.Spec.InitContainers[1] }
func initConfig(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] }

// extraContainer is a valid, defaulted container to add to a pod.
func extraContainer(name string) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile}
}

func TestValidateContainers(t *testing.T) {
	runPodCases(t, []podCase{
		{"at least one container", "", func(p *v1.Pod) { p.Spec.Containers = nil }, "spec.containers: Required value"},
		{"container name must be a DNS label", "", func(p *v1.Pod) { app(p).Name = "App" }, `spec.containers[0].name: Invalid value: "App"`},
		{"container name required", "", func(p *v1.Pod) { app(p).Name = "" }, "spec.containers[0].name: Required value"},
		{"duplicate regular container", "", func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, extraContainer("app")) },
			`spec.containers[1].name: Duplicate value: "app"`},
		{"second container", "", func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, extraContainer("metrics")) }, ""},
		{"init container named like a container", "", func(p *v1.Pod) { initConfig(p).Name = "app" }, `spec.initContainers[0].name: Duplicate value: "app"`},
		{"two init containers with one name", "", func(p *v1.Pod) { shipper(p).Name = "init-config" }, `spec.initContainers[1].name: Duplicate value: "init-config"`},
		{"image required", "", func(p *v1.Pod) { app(p).Image = "" }, "spec.containers[0].image: Required value"},
		{"image with spaces", "", func(p *v1.Pod) { app(p).Image = " nginx" }, `spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace`},
		{"imagePullPolicy", "", func(p *v1.Pod) { app(p).ImagePullPolicy = "Sometimes" }, `spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`},
		{"terminationMessagePolicy", "", func(p *v1.Pod) { app(p).TerminationMessagePolicy = "Log" }, `terminationMessagePolicy: Unsupported value: "Log"`},
		{"probe on a plain init container", "", func(p *v1.Pod) { initConfig(p).ReadinessProbe = shipper(p).ReadinessProbe },
			"spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"hook on a plain init container", "", func(p *v1.Pod) { initConfig(p).Lifecycle = app(p).Lifecycle }, "spec.initContainers[0].lifecycle: Forbidden"},
		{"probes and hooks on a sidecar", "", func(p *v1.Pod) {
			shipper(p).LivenessProbe = shipper(p).ReadinessProbe
			shipper(p).Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}, ""},
		{"volumeDevices", "", func(p *v1.Pod) { app(p).VolumeDevices = []v1.VolumeDevice{{Name: "work", DevicePath: "/dev/xvda"}} }, "spec.containers[0].volumeDevices: Forbidden"},
	})
}

func TestValidatePorts(t *testing.T) {
	port := func(p *v1.Pod) *v1.ContainerPort { return &app(p).Ports[0] }
	runPodCases(t, []podCase{
		{"containerPort required", "", func(p *v1.Pod) { port(p).ContainerPort = 0 }, "spec.containers[0].ports[0].containerPort: Required value"},
		{"containerPort range", "", func(p *v1.Pod) { port(p).ContainerPort = 70000 }, "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535"},
		{"hostPort range", "", func(p *v1.Pod) { port(p).HostPort = -1 }, "spec.containers[0].ports[0].hostPort: Invalid value: -1"},
		{"hostPort", "", func(p *v1.Pod) { port(p).HostPort = 18080 }, ""},
		{"protocol", "", func(p *v1.Pod) { port(p).Protocol = "HTTP" }, `spec.containers[0].ports[0].protocol: Unsupported value: "HTTP"`},
		{"protocol SCTP", "", func(p *v1.Pod) { port(p).Protocol = v1.ProtocolSCTP }, ""},
		{"port name syntax", "", func(p *v1.Pod) { port(p).Name = "HTTP_1" }, `spec.containers[0].ports[0].name: Invalid value: "HTTP_1"`},
		{"port name too long", "", func(p *v1.Pod) { port(p).Name = "a-very-long-port-name" }, "must be no more than 15 characters"},
		{"duplicate port name", "", func(p *v1.Pod) {
			app(p).Ports = append(app(p).Ports, v1.ContainerPort{Name: "http", ContainerPort: 8443, Protocol: v1.ProtocolTCP})
		}, `spec.containers[0].ports[1].name: Duplicate value: "http"`},
		{"two named ports", "", func(p *v1.Pod) {
			app(p).Ports = append(app(p).Ports, v1.ContainerPort{Name: "https", ContainerPort: 8443, Protocol: v1.ProtocolTCP})
		}, ""},
		{"host port bound twice in a pod", "", func(p *v1.Pod) {
			port(p).HostPort = 80
			c := extraContainer("metrics")
			c.Ports = []v1.ContainerPort{{ContainerPort: 9090, HostPort: 80, Protocol: v1.ProtocolTCP}}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, `spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"`},
	})
}

func TestValidateEnv(t *testing.T) {
	env := func(p *v1.Pod, i int) *v1.EnvVar { return &app(p).Env[i] }
	runPodCases(t, []podCase{
		{"name required", "", func(p *v1.Pod) { env(p, 0).Name = "" }, "spec.containers[0].env[0].name: Required value"},
		{"name with =", "", func(p *v1.Pod) { env(p, 0).Name = "A=B" }, `spec.containers[0].env[0].name: Invalid value: "A=B"`},
		{"relaxed name", "", func(p *v1.Pod) { env(p, 0).Name = "my.var-1 x" }, ""},
		{"valueFrom without a source", "", func(p *v1.Pod) { env(p, 0).ValueFrom = &v1.EnvVarSource{} },
			"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of"},
		{"valueFrom with two sources", "", func(p *v1.Pod) { env(p, 0).ValueFrom.SecretKeyRef = env(p, 1).ValueFrom.SecretKeyRef },
			"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"},
		{"value and valueFrom", "", func(p *v1.Pod) { env(p, 0).Value = "debug" }, "may not be specified when `value` is not empty"},
		{"plain value", "", func(p *v1.Pod) { env(p, 0).ValueFrom, env(p, 0).Value = nil, "debug" }, ""},
		{"unsupported fieldPath", "", func(p *v1.Pod) { env(p, 2).ValueFrom.FieldRef.FieldPath = "spec.hostname" },
			`spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.hostname"`},
		{"label subscript", "", func(p *v1.Pod) { env(p, 2).ValueFrom.FieldRef.FieldPath = "metadata.labels['app']" }, ""},
		{"bad label subscript", "", func(p *v1.Pod) { env(p, 2).ValueFrom.FieldRef.FieldPath = "metadata.labels['-x']" }, `fieldRef.fieldPath: Invalid value: "-x"`},
		{"fieldRef apiVersion", "", func(p *v1.Pod) { env(p, 2).ValueFrom.FieldRef.APIVersion = "v2" }, `fieldRef.apiVersion: Unsupported value: "v2"`},
		{"resourceFieldRef", "", func(p *v1.Pod) {
			env(p, 2).ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}
		}, ""},
		{"resourceFieldRef resource", "", func(p *v1.Pod) {
			env(p, 2).ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}}
		}, `resourceFieldRef.resource: Unsupported value: "limits.gpu"`},
		{"resourceFieldRef divisor", "", func(p *v1.Pod) {
			env(p, 2).ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("10m")}}
		}, `resourceFieldRef.divisor: Invalid value: "10m"`},
		{"resourceFieldRef container", "", func(p *v1.Pod) {
			env(p, 2).ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "ap", Resource: "limits.cpu"}}
		}, `resourceFieldRef.containerName: Not found: "ap"`},
		{"configMapKeyRef key", "", func(p *v1.Pod) { env(p, 0).ValueFrom.ConfigMapKeyRef.Key = "" }, "configMapKeyRef.key: Required value"},
		{"envFrom without a source", "", func(p *v1.Pod) { app(p).EnvFrom = []v1.EnvFromSource{{Prefix: "X_"}} },
			"spec.containers[0].envFrom[0]: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"},
		{"envFrom prefix", "", func(p *v1.Pod) {
			app(p).EnvFrom = []v1.EnvFromSource{{Prefix: "X=", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}}}}
		}, `spec.containers[0].envFrom[0].prefix: Invalid value: "X="`},
	})
}

func TestValidateProbesAndHooks(t *testing.T) {
	liveness := func(p *v1.Pod) *v1.Probe { return app(p).LivenessProbe }
	runPodCases(t, []podCase{
		{"two handlers", "", func(p *v1.Pod) { liveness(p).TCPSocket = &v1.TCPSocketAction{Port: intstr.FromInt32(8080)} },
			"spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"},
		{"no handler", "", func(p *v1.Pod) { liveness(p).HTTPGet = nil }, "spec.containers[0].livenessProbe: Required value: must specify a handler type"},
		{"exec without command", "", func(p *v1.Pod) { shipper(p).ReadinessProbe.Exec.Command = nil },
			"spec.initContainers[1].readinessProbe.exec.command: Required value"},
		{"failureThreshold", "", func(p *v1.Pod) { liveness(p).FailureThreshold = 0 }, "livenessProbe.failureThreshold: Invalid value: 0: must be greater than or equal to 1"},
		{"periodSeconds", "", func(p *v1.Pod) { liveness(p).PeriodSeconds = -5 }, "livenessProbe.periodSeconds: Invalid value: -5"},
		{"initialDelaySeconds", "", func(p *v1.Pod) { liveness(p).InitialDelaySeconds = -1 }, "livenessProbe.initialDelaySeconds: Invalid value: -1"},
		{"liveness successThreshold", "", func(p *v1.Pod) { liveness(p).SuccessThreshold = 2 }, "livenessProbe.successThreshold: Invalid value: 2: must be 1"},
		{"startup successThreshold", "", func(p *v1.Pod) {
			app(p).StartupProbe = &v1.Probe{ProbeHandler: app(p).ReadinessProbe.ProbeHandler, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 3, FailureThreshold: 30}
		}, "startupProbe.successThreshold: Invalid value: 3: must be 1"},
		{"readiness successThreshold", "", func(p *v1.Pod) { app(p).ReadinessProbe.SuccessThreshold = 2 }, ""},
		{"readiness grace period", "", func(p *v1.Pod) { app(p).ReadinessProbe.TerminationGracePeriodSeconds = ptrTo(int64(5)) },
			"readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"},
		{"liveness grace period", "", func(p *v1.Pod) { liveness(p).TerminationGracePeriodSeconds = ptrTo(int64(5)) }, ""},
		{"unknown named port", "", func(p *v1.Pod) { liveness(p).HTTPGet.Port = intstr.FromString("htp") },
			`spec.containers[0].livenessProbe.httpGet.port: Not found: "htp": container "app" has no port of that name`},
		{"port number out of range", "", func(p *v1.Pod) { app(p).ReadinessProbe.TCPSocket.Port = intstr.FromInt32(0) }, "readinessProbe.tcpSocket.port: Invalid value: 0"},
		{"scheme", "", func(p *v1.Pod) { liveness(p).HTTPGet.Scheme = "FTP" }, `livenessProbe.httpGet.scheme: Unsupported value: "FTP"`},
		{"header name", "", func(p *v1.Pod) { liveness(p).HTTPGet.HTTPHeaders = []v1.HTTPHeader{{Name: "X Bad", Value: "1"}} }, `httpHeaders[0].name: Invalid value: "X Bad"`},
		{"grpc probe", "", func(p *v1.Pod) {
			liveness(p).HTTPGet, liveness(p).GRPC = nil, &v1.GRPCAction{Port: 9000, Service: ptrTo("")}
		}, ""},
		{"hook without handler", "", func(p *v1.Pod) { app(p).Lifecycle.PreStop.Exec = nil }, "spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"},
		{"sleep longer than the grace period", "", func(p *v1.Pod) {
			app(p).Lifecycle.PreStop = &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 60}}
		}, "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)"},
		{"sleep hook", "", func(p *v1.Pod) { app(p).Lifecycle.PreStop = &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}} }, ""},
		{"httpGet hook to a named port", "", func(p *v1.Pod) {
			app(p).Lifecycle.PostStart = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/warm", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTP}}
		}, ""},
	})
}

func TestValidateResources(t *testing.T) {
	resources := func(p *v1.Pod) *v1.ResourceRequirements { return &app(p).Resources }
	runPodCases(t, []podCase{
		{"request above limit", "", func(p *v1.Pod) { resources(p).Requests[v1.ResourceMemory] = resource.MustParse("256Mi") },
			`spec.containers[0].resources.requests[memory]: Invalid value: "256Mi": must be less than or equal to memory limit of 128Mi`},
		{"request equal to limit", "", func(p *v1.Pod) { resources(p).Requests[v1.ResourceMemory] = resource.MustParse("128Mi") }, ""},
		{"negative quantity", "", func(p *v1.Pod) { resources(p).Requests[v1.ResourceCPU] = resource.MustParse("-1") },
			`resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown resource", "", func(p *v1.Pod) { resources(p).Limits["gpu"] = resource.MustParse("1") },
			`resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers`},
		{"extended resource without a limit", "", func(p *v1.Pod) { resources(p).Requests["example.com/gpu"] = resource.MustParse("1") },
			"resources.limits[example.com/gpu]: Required value"},
		{"extended resource", "", func(p *v1.Pod) {
			resources(p).Requests["example.com/gpu"] = resource.MustParse("1")
			resources(p).Limits["example.com/gpu"] = resource.MustParse("1")
		}, ""},
		{"fractional extended resource", "", func(p *v1.Pod) {
			resources(p).Requests["example.com/gpu"] = resource.MustParse("500m")
			resources(p).Limits["example.com/gpu"] = resource.MustParse("500m")
		}, `resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`},
		{"huge pages without cpu or memory", "", func(p *v1.Pod) {
			*resources(p) = v1.ResourceRequirements{Limits: v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}}
		}, "spec.containers[0].resources: Forbidden: HugePages require cpu or memory"},
	})
}

func TestValidateContainerSecurityContext(t *testing.T) {
	runPodCases(t, []podCase{
		{"privileged without privilege escalation", "", func(p *v1.Pod) {
			app(p).SecurityContext = &v1.SecurityContext{Privileged: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false)}
		}, "spec.containers[0].securityContext: Invalid value: \"\": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
		{"runAsUser", "", func(p *v1.Pod) { app(p).SecurityContext = &v1.SecurityContext{RunAsUser: ptrTo(int64(-2))} },
			"spec.containers[0].securityContext.runAsUser: Invalid value: -2"},
		{"localhost seccomp without a profile", "", func(p *v1.Pod) {
			app(p).SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		}, "securityContext.seccompProfile.localhostProfile: Required value"},
		{"restricted container", "", func(p *v1.Pod) {
			app(p).SecurityContext = &v1.SecurityContext{
				RunAsUser: ptrTo(int64(101)), RunAsNonRoot: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false),
				Capabilities:   &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
			}
		}, ""},
	})
}
