package manifest

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podCase changes the one pod of a valid bundle and states what Validate
// must then say: a substring of the error, or "" for no error.
type podCase struct {
	name   string
	base   string // manifests holding one pod; webManifests when empty
	mutate func(pod *v1.Pod)
	want   string
}

func runPodCases(t *testing.T, cases []podCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = webManifests
			}
			b := decodeString(t, base, "pod.yaml")
			tc.mutate(onlyPod(t, b))
			err := b.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want no error, got:\n%v", err)
			case tc.want != "" && err == nil:
				t.Errorf("want an error containing %q, got none", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error\n%v\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

func TestValidationErrorNamesFileObjectAndField(t *testing.T) {
	b := decodeString(t, webManifests, "pod.yaml")
	pod := onlyPod(t, b)
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
		Name: "app", Image: "busybox", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile,
	})
	err := b.Validate()
	want := `pod.yaml: Pod default/web: spec.containers[1].name: Duplicate value: "app"`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	var fieldErr *field.Error
	if !errors.As(err, &fieldErr) || fieldErr.Field != "spec.containers[1].name" || fieldErr.Type != field.ErrorTypeDuplicate {
		t.Errorf("errors.As found %+v, want the field error", fieldErr)
	}
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	manifests := webManifests + "---\n" + podYAML("Bad_Name", "") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  bad key: x\n"
	err := decodeString(t, manifests, "all.yaml").Validate()
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Validate = %v, want *InvalidError", err)
	}
	for _, want := range []string{
		`all.yaml: ConfigMap default/cm: data[bad key]: Invalid value: "bad key"`,
		`all.yaml: Pod default/Bad_Name: metadata.name: Invalid value: "Bad_Name"`,
		`all.yaml: Pod default/Bad_Name: spec.containers[0].image: Required value`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not contain %q", err, want)
		}
	}
	if len(inv.Problems) != 3 || len(inv.Sources()) != 1 {
		t.Errorf("got %d problems from %v, want 3 from all.yaml", len(inv.Problems), inv.Sources())
	}
}

func TestValidateMetadata(t *testing.T) {
	runPodCases(t, []podCase{
		{"name must be a DNS subdomain", "", func(p *v1.Pod) { p.Name = "Web_1" }, `metadata.name: Invalid value: "Web_1"`},
		{"dotted lowercase name", "", func(p *v1.Pod) { p.Name = "web-1.example" }, ""},
		{"name required", "", func(p *v1.Pod) { p.Name = "" }, "metadata.name: Required value"},
		{"generateName alone", "", func(p *v1.Pod) { p.Name, p.GenerateName = "", "web-" }, "metadata.name: Required value: generateName is not supported"},
		{"namespace must be a DNS label", minimalPod, func(p *v1.Pod) { p.Namespace = "team.a" }, `metadata.namespace: Invalid value: "team.a"`},
		{"other namespace", minimalPod, func(p *v1.Pod) { p.Namespace = "team-a" }, ""},
		{"label key", "", func(p *v1.Pod) { p.Labels["-bad"] = "x" }, `metadata.labels: Invalid value: "-bad"`},
		{"label value", "", func(p *v1.Pod) { p.Labels["tier"] = "not valid!" }, `metadata.labels: Invalid value: "not valid!"`},
		{"prefixed label", "", func(p *v1.Pod) { p.Labels["app.kubernetes.io/name"] = "web" }, ""},
		{"annotation key", "", func(p *v1.Pod) { p.Annotations = map[string]string{"bad key": "x"} }, `metadata.annotations: Invalid value: "bad key"`},
		{"berth's annotation", "", func(p *v1.Pod) { p.Annotations = map[string]string{"berth.dev/watch-dir": "/tmp"} },
			`pod.yaml: Pod default/web: metadata.annotations[berth.dev/watch-dir]: Invalid value: "berth.dev/watch-dir": reserved`},
		{"berth's annotation in other case", "", func(p *v1.Pod) { p.Annotations = map[string]string{"Berth.dev/pod": "{}"} }, `metadata.annotations[Berth.dev/pod]: Invalid value`},
		{"berth subdomain label", "", func(p *v1.Pod) { p.Labels["x.berth.dev/agent"] = "true" }, `metadata.labels[x.berth.dev/agent]: Invalid value`},
		{"berth's label", "", func(p *v1.Pod) { p.Labels["berth.dev/agent"] = "true" }, `metadata.labels[berth.dev/agent]: Invalid value`},
		{"kubelet's pod label", "", func(p *v1.Pod) { p.Labels["io.kubernetes.pod.uid"] = "x" }, `metadata.labels[io.kubernetes.pod.uid]: Invalid value`},
		{"kubelet's container annotation", "", func(p *v1.Pod) {
			p.Annotations = map[string]string{"io.kubernetes.container.restartCount": "9"}
		}, `metadata.annotations[io.kubernetes.container.restartCount]: Invalid value`},
		{"kubelet's config annotation", "", func(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "api"} }, `metadata.annotations[kubernetes.io/config.source]: Invalid value`},
		{"a domain ending in berth.dev is not berth's", "", func(p *v1.Pod) { p.Labels["myberth.dev/x"] = "y" }, ""},
		{"annotation value is free text", "", func(p *v1.Pod) { p.Annotations = map[string]string{"example.com/note": "any text!"} }, ""},
	})
}

func TestValidatePodSpec(t *testing.T) {
	runPodCases(t, []podCase{
		{"restartPolicy", "", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, `spec.restartPolicy: Unsupported value: "Sometimes"`},
		{"restartPolicy OnFailure", "", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure }, ""},
		{"negative grace period", "", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-1)) }, "spec.terminationGracePeriodSeconds: Invalid value: -1"},
		{"zero grace period", "", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(0)) }, ""},
		{"activeDeadlineSeconds zero", "", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) }, "spec.activeDeadlineSeconds: Invalid value: 0"},
		{"activeDeadlineSeconds", "", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(600)) }, ""},
		{"dnsPolicy", "", func(p *v1.Pod) { p.Spec.DNSPolicy = "Bogus" }, `spec.dnsPolicy: Unsupported value: "Bogus"`},
		{"dnsPolicy None needs dnsConfig", "", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, "spec.dnsConfig: Required value: must provide `dnsConfig`"},
		{"dnsPolicy None needs a nameserver", "", func(p *v1.Pod) {
			p.Spec.DNSPolicy, p.Spec.DNSConfig = v1.DNSNone, &v1.PodDNSConfig{Searches: []string{"example.com"}}
		}, "spec.dnsConfig.nameservers: Required value"},
		{"dnsPolicy None with dnsConfig", "", func(p *v1.Pod) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.cluster.local."}, Options: []v1.PodDNSConfigOption{{Name: "ndots"}}}
		}, ""},
		{"nameserver must be an IP", "", func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"dns.example"}} }, `spec.dnsConfig.nameservers[0]: Invalid value: "dns.example"`},
		{"hostNetwork hostPort must equal containerPort", "", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 9090
		}, "spec.containers[0].ports[0].hostPort: Invalid value: 9090: must match `containerPort`"},
		{"hostNetwork hostPort equal to containerPort", "", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, ""},
		{"ephemeral containers", "", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, "spec.ephemeralContainers: Forbidden: cannot be set on create"},
		{"windows pod", "", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }, `spec.os.name: Unsupported value: "windows"`},
		{"linux pod", "", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Linux} }, ""},
		{"hostname", "", func(p *v1.Pod) { p.Spec.Hostname = "Web" }, `spec.hostname: Invalid value: "Web"`},
		{"host alias IP", "", func(p *v1.Pod) { p.Spec.HostAliases = []v1.HostAlias{{IP: "bad", Hostnames: []string{"db"}}} }, `spec.hostAliases[0].ip: Invalid value: "bad"`},
		{"host alias", "", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.local"}}}
		}, ""},
		{"user namespace with host network", "", func(p *v1.Pod) { p.Spec.HostUsers, p.Spec.HostNetwork = ptrTo(false), true }, "spec.hostNetwork: Forbidden: when `hostUsers` is false"},
		{"user namespace with host PID", "", func(p *v1.Pod) { p.Spec.HostUsers, p.Spec.HostPID = ptrTo(false), true }, "spec.hostPID: Forbidden: when `hostUsers` is false"},
		{"user namespace with host IPC", "", func(p *v1.Pod) { p.Spec.HostUsers, p.Spec.HostIPC = ptrTo(false), true }, "spec.hostIPC: Forbidden: when `hostUsers` is false"},
		{"user namespace", "", func(p *v1.Pod) { p.Spec.HostUsers = ptrTo(false) }, ""},
		{"host user namespace with host namespaces", "", func(p *v1.Pod) { p.Spec.HostUsers, p.Spec.HostPID, p.Spec.HostIPC = ptrTo(true), true, true }, ""},
		{"user namespace with volumeDevices", "", func(p *v1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.InitContainers[0].VolumeDevices = []v1.VolumeDevice{{Name: "work", DevicePath: "/dev/xvda"}}
		}, "spec.initContainers[0].volumeDevices: Forbidden: when `hostUsers` is false"},
		{"Unmasked procMount without a user namespace", "", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptrTo(v1.UnmaskedProcMount)}
		}, "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"},
		{"Unmasked procMount in a user namespace", "", func(p *v1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptrTo(v1.UnmaskedProcMount)}
		}, ""},
		{"pod runAsUser", "", func(p *v1.Pod) { p.Spec.SecurityContext.RunAsUser = ptrTo(int64(-1)) }, "spec.securityContext.runAsUser: Invalid value: -1"},
		{"pod fsGroup", "", func(p *v1.Pod) { p.Spec.SecurityContext.FSGroup = ptrTo(int64(2000)) }, ""},
		{"duplicate sysctl", "", func(p *v1.Pod) {
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}, {Name: "net.core.somaxconn", Value: "2"}}
		}, `spec.securityContext.sysctls[1].name: Duplicate value: "net.core.somaxconn"`},
	})
}

func TestValidateReferences(t *testing.T) {
	runPodCases(t, []podCase{
		{"configMap volume to a missing ConfigMap", "", func(p *v1.Pod) { p.Spec.Volumes[0].ConfigMap.Name = "missing" },
			`spec.volumes[0].configMap.name: Not found: "missing": no ConfigMap default/missing in the manifests`},
		{"optional configMap volume", "", func(p *v1.Pod) {
			p.Spec.Volumes[0].ConfigMap.Name, p.Spec.Volumes[0].ConfigMap.Optional = "missing", ptrTo(true)
		}, ""},
		{"configMap volume item key", "", func(p *v1.Pod) { p.Spec.Volumes[0].ConfigMap.Items[0].Key = "nginx.yaml" },
			`spec.volumes[0].configMap.items[0].key: Not found: "nginx.yaml": ConfigMap default/web-config has no such key`},
		{"secret env key", "", func(p *v1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom.SecretKeyRef.Key = "passwd" },
			`spec.containers[0].env[1].valueFrom.secretKeyRef.key: Not found: "passwd"`},
		{"optional secret env key", "", func(p *v1.Pod) {
			ref := p.Spec.Containers[0].Env[1].ValueFrom.SecretKeyRef
			ref.Key, ref.Optional = "passwd", ptrTo(true)
		}, ""},
		{"configMap env in another namespace", minimalPod, func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}, Key: "log_level"}}}}
		}, `spec.containers[0].env[0].valueFrom.configMapKeyRef.name: Not found: "web-config"`},
		{"envFrom a missing Secret", "", func(p *v1.Pod) {
			p.Spec.InitContainers[0].EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "db"}}}}
		}, `spec.initContainers[0].envFrom[0].secretRef.name: Not found: "db"`},
		{"envFrom the Secret", "", func(p *v1.Pod) {
			p.Spec.InitContainers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "WEB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "web-secret"}}}}
		}, ""},
		{"projected secret", "", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				DefaultMode: ptrTo(int32(0o400)),
				Sources:     []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "other"}}}},
			}}})
		}, `spec.volumes[3].projected.sources[0].secret.name: Not found: "other"`},
	})
}

func TestValidateConfigObjects(t *testing.T) {
	cases := []struct {
		name, manifests, want string
	}{
		{"ConfigMap key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a/b: x\n", `ConfigMap default/c: data[a/b]: Invalid value: "a/b"`},
		{"ConfigMap key in both data and binaryData", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: x\nbinaryData:\n  k: eA==\n", "data[k]: Invalid value: \"k\": duplicate of key present in binaryData"},
		{"ConfigMap with berth's annotation", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    berth.dev/sources: x\n",
			`ConfigMap default/c: metadata.annotations[berth.dev/sources]: Invalid value`},
		{"ConfigMap name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: C\n", `ConfigMap default/C: metadata.name: Invalid value: "C"`},
		{"valid ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  app.properties: x\n  .env: z\n", ""},
		{"Secret key", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  a b: x\n", `Secret default/s: data[a b]: Invalid value: "a b"`},
		{"TLS Secret without its keys", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: x\n", "data[tls.key]: Required value"},
		{"TLS Secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: x\n  tls.key: k\n", ""},
		{"docker config Secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '[]'\n", "data[.dockerconfigjson]: Invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeString(t, tc.manifests, "cfg.yaml").Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v does not contain %q", err, tc.want)
			}
		})
	}
}

func TestValidateHostPortsAcrossPods(t *testing.T) {
	withHostPort := func(name, port, hostIP string) string {
		return podYAML(name, "nginx") + "    ports:\n    - containerPort: 80\n      hostPort: " + port + "\n      hostIP: \"" + hostIP + "\"\n"
	}
	conflict := decodeString(t, withHostPort("a", "8080", "")+"---\n"+withHostPort("b", "8080", "127.0.0.1"), "ports.yaml").Validate()
	want := `ports.yaml: Pod default/b: spec.containers[0].ports[0].hostPort: Duplicate value: "TCP/8080": already used by Pod default/a`
	if conflict == nil || conflict.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", conflict, want)
	}
	distinct := decodeString(t, withHostPort("a", "8080", "127.0.0.1")+"---\n"+withHostPort("b", "8080", "127.0.0.2")+"---\n"+withHostPort("c", "8081", ""), "ports.yaml")
	if err := distinct.Validate(); err != nil {
		t.Errorf("distinct host ports: %v", err)
	}
}
