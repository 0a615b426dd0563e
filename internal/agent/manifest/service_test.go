package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
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
		{"externalName", "spec:\n", "spec:\n  type: ExternalName\n", `spec.type: Unsupported value: "ExternalName"`},
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
