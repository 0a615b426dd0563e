package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: http
  - name: raw
    port: 81
`

func TestDecodeServiceDefaults(t *testing.T) {
	b := decodeString(t, serviceYAML, "svc.yaml")
	if len(b.Services) != 1 {
		t.Fatalf("decoded %d services; want 1", len(b.Services))
	}
	s := b.Services[0]
	if s.Namespace != "default" || s.Source != "svc.yaml" || s.Spec.Type != v1.ServiceTypeClusterIP || s.Spec.SessionAffinity != v1.ServiceAffinityNone {
		t.Errorf("defaults: %+v", s.Spec)
	}
	p := s.Spec.Ports
	if p[0].Protocol != v1.ProtocolTCP || p[0].TargetPort.String() != "http" || p[1].TargetPort.IntValue() != 81 {
		t.Errorf("port defaults: %+v", p)
	}
	if err := b.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// The same Service twice in a bundle names both sources.
	if msg := decodeError(t, serviceYAML+"---\n"+serviceYAML, "two.yaml"); !strings.Contains(msg, "Service default/web") {
		t.Errorf("duplicate: %s", msg)
	}
}

// sessionAffinity defaults as the API server's: None without a config,
// ClientIP with a 10800 s timeout unless one is given.
func TestDecodeServiceAffinityDefaults(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want int32 // 0: no config
	}{
		{"  sessionAffinity: None\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}\n", 0},
		{"  sessionAffinity: ClientIP\n", 10800},
		{"  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {}}\n", 10800},
		{"  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}\n", 60},
	} {
		s := decodeString(t, strings.Replace(serviceYAML, "spec:\n", "spec:\n"+tc.spec, 1), "svc.yaml").Services[0]
		c := s.Spec.SessionAffinityConfig
		switch {
		case tc.want == 0 && c != nil:
			t.Errorf("%q: config %+v; want none", tc.spec, c)
		case tc.want != 0 && (c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil || *c.ClientIP.TimeoutSeconds != tc.want):
			t.Errorf("%q: config %+v; want timeoutSeconds %d", tc.spec, c, tc.want)
		}
	}
}

func TestValidateService(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"name is a DNS-1035 label", "name: web", "name: 1web", `metadata.name: Invalid value: "1web"`},
		{"ports required", "  ports:\n  - name: http\n    port: 80\n    targetPort: http\n  - name: raw\n    port: 81\n", "", "spec.ports: Required value"},
		{"headless needs no ports", "  ports:\n  - name: http\n    port: 80\n    targetPort: http\n  - name: raw\n    port: 81\n", "  clusterIP: None\n", ""},
		{"names required with two ports", "  - name: raw\n", "  - protocol: TCP\n", "spec.ports[1].name: Required value"},
		{"port range", "port: 81", "port: 70000", "spec.ports[1].port: Invalid value: 70000"},
		{"target port name", "targetPort: http", "targetPort: Bad_Name", `spec.ports[0].targetPort: Invalid value: "Bad_Name"`},
		{"protocol", "port: 81", "port: 81\n    protocol: ICMP", `spec.ports[1].protocol: Unsupported value: "ICMP"`},
		{"nodePort needs the type", "port: 81", "port: 81\n    nodePort: 30080", "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		{"NodePort allocates", "spec:\n", "spec:\n  type: NodePort\n", ""},
		{"nodePort out of range", "port: 81", "port: 81\n    nodePort: 29999", "spec.ports[1].nodePort: Invalid value: 29999: provided port is not in the valid range"},
		{"type", "spec:\n", "spec:\n  type: Magic\n", `spec.type: Unsupported value: "Magic"`},
		{"externalName required", "spec:\n", "spec:\n  type: ExternalName\n", "spec.externalName: Required value"},
		{"externalName", "spec:\n", "spec:\n  type: ExternalName\n  externalName: db.example.com.\n", ""},
		{"externalName without ports", "spec:\n  selector: {app: web}\n  ports:\n  - name: http\n    port: 80\n    targetPort: http\n  - name: raw\n    port: 81\n",
			"spec:\n  type: ExternalName\n  externalName: web.default.svc.cluster.local\n", ""},
		{"externalName lowercase", "spec:\n", "spec:\n  type: ExternalName\n  externalName: DB.example.com\n", `spec.externalName: Invalid value: "DB.example.com": a lowercase RFC 1123 subdomain`},
		{"externalName no clusterIP", "spec:\n", "spec:\n  type: ExternalName\n  externalName: db\n  clusterIP: 10.96.0.9\n", "spec.clusterIPs: Forbidden: may not be set for ExternalName services"},
		{"externalName not headless", "spec:\n", "spec:\n  type: ExternalName\n  externalName: db\n  clusterIP: None\n", "spec.clusterIPs: Forbidden: may not be set for ExternalName services"},
		{"externalName no families", "spec:\n", "spec:\n  type: ExternalName\n  externalName: db\n  ipFamilyPolicy: SingleStack\n", "spec.ipFamilyPolicy: Forbidden"},
		{"externalName no nodePort", "port: 81", "port: 81\n    nodePort: 30080\n  type: ExternalName\n  externalName: db", "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ExternalName'"},
		{"sessionAffinity", "spec:\n", "spec:\n  sessionAffinity: Cookie\n", `spec.sessionAffinity: Unsupported value: "Cookie": supported values: "ClientIP", "None"`},
		{"ClientIP timeout", "spec:\n", "spec:\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 86401}}\n",
			"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"},
		{"ClientIP timeout zero", "spec:\n", "spec:\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 0}}\n", "timeoutSeconds: Invalid value: 0"},
		{"ClientIP longest timeout", "spec:\n", "spec:\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 86400}}\n", ""},
		{"externalIPs", "spec:\n", "spec:\n  externalIPs: [192.0.2.7, 127.0.0.1, nope]\n",
			`spec.externalIPs[1]: Invalid value: "127.0.0.1": may not be in the loopback range`},
		{"externalIPs address", "spec:\n", "spec:\n  externalIPs: [nope]\n", `spec.externalIPs[0]: Invalid value: "nope": must be a valid IP address`},
		{"clusterIP", "spec:\n", "spec:\n  clusterIP: 10.96.0.300\n", `spec.clusterIP: Invalid value: "10.96.0.300"`},
		{"headless NodePort", "spec:\n", "spec:\n  type: NodePort\n  clusterIP: None\n", "spec.clusterIP: Invalid value: \"None\": may not be set to 'None' for NodePort services"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			manifests := strings.Replace(serviceYAML, tc.from, tc.to, 1)
			if tc.name == "nodePort out of range" { // a NodePort Service
				manifests = strings.Replace(manifests, "spec:\n", "spec:\n  type: NodePort\n", 1)
			}
			err := decodeString(t, manifests, "svc.yaml").Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "svc.yaml: Service default/") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// A ClientIP affinity that defaulting did not reach (a bundle built by
// hand) is refused, not dereferenced.
func TestClientIPAffinityWithoutConfigIsRequired(t *testing.T) {
	for _, c := range []*v1.SessionAffinityConfig{nil, {}, {ClientIP: &v1.ClientIPConfig{}}} {
		spec := &v1.ServiceSpec{SessionAffinity: v1.ServiceAffinityClientIP, SessionAffinityConfig: c}
		errs := validateSessionAffinity(spec, field.NewPath("spec"))
		if len(errs) != 1 || errs[0].Error() != "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Required value" {
			t.Errorf("config %+v: %v", c, errs)
		}
	}
}
