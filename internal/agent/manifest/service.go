package manifest

import (
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Service is a decoded v1 Service and the source it came from.
type Service struct {
	*v1.Service
	Source string `json:"source"`
}

const kindService = "Service"

// NodePortRange is the API server's default --service-node-port-range.
const (
	NodePortMin = 30000
	NodePortMax = 32767
)

// setServiceDefaults defaults a Service as the API server does: type
// ClusterIP, sessionAffinity None, each port's protocol TCP and targetPort
// its port, internalTrafficPolicy Cluster, externalTrafficPolicy Cluster
// for NodePort and LoadBalancer.
func setServiceDefaults(s *v1.Service) {
	if s.Namespace == "" {
		s.Namespace = metav1.NamespaceDefault
	}
	if s.Spec.Type == "" {
		s.Spec.Type = v1.ServiceTypeClusterIP
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = v1.ServiceAffinityNone
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if s.Spec.Type != v1.ServiceTypeExternalName && s.Spec.InternalTrafficPolicy == nil {
		s.Spec.InternalTrafficPolicy = ptrTo(v1.ServiceInternalTrafficPolicyCluster)
	}
	if (s.Spec.Type == v1.ServiceTypeNodePort || s.Spec.Type == v1.ServiceTypeLoadBalancer) && s.Spec.ExternalTrafficPolicy == "" {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	s.Status = v1.ServiceStatus{}
}

// serviceProblems validates the Services as the API server does: the
// name a DNS-1035 label, ports, types and the fields each type allows.
// Whether a given clusterIP or nodePort is in this node's range and free
// is the agent's to say.
func (b *Bundle) serviceProblems() []Problem {
	var problems []Problem
	for _, s := range b.Services {
		errs := validateObjectMeta(&s.ObjectMeta, field.NewPath("metadata"))
		if s.Name != "" {
			errs = append(errs, invalidEach(field.NewPath("metadata", "name"), s.Name, validation.IsDNS1035Label(s.Name))...)
		}
		errs = append(errs, validateServiceSpec(&s.Spec, field.NewPath("spec"))...)
		problems = append(problems, fieldProblems(s.Source, objectName(kindService, &s.ObjectMeta), errs)...)
	}
	return problems
}

func validateServiceSpec(spec *v1.ServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	headless := spec.ClusterIP == v1.ClusterIPNone
	switch spec.Type {
	case v1.ServiceTypeClusterIP:
	case v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer:
		if headless {
			errs = append(errs, field.Invalid(path.Child("clusterIP"), spec.ClusterIP, "may not be set to 'None' for "+string(spec.Type)+" services"))
		}
	case v1.ServiceTypeExternalName:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, []string{"ClusterIP", "NodePort", "LoadBalancer"}))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, []string{"ClusterIP", "NodePort", "LoadBalancer"}))
	}
	if spec.ClusterIP != "" && !headless {
		if _, err := netip.ParseAddr(spec.ClusterIP); err != nil {
			errs = append(errs, field.Invalid(path.Child("clusterIP"), spec.ClusterIP, "must be a valid IP address or 'None'"))
		}
	}
	if len(spec.Ports) == 0 && !headless {
		errs = append(errs, field.Required(path.Child("ports"), ""))
	}
	errs = append(errs, validateLabelMap(spec.Selector, path.Child("selector"))...)
	if spec.SessionAffinity != v1.ServiceAffinityNone && spec.SessionAffinity != v1.ServiceAffinityClientIP {
		errs = append(errs, field.NotSupported(path.Child("sessionAffinity"), spec.SessionAffinity, []string{"None", "ClientIP"}))
	}
	return append(errs, validateServicePorts(spec, path.Child("ports"))...)
}

func validateServicePorts(spec *v1.ServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	nodePorts := map[string]bool{}
	for i, p := range spec.Ports {
		pp := path.Index(i)
		switch {
		case p.Name == "" && len(spec.Ports) > 1:
			errs = append(errs, field.Required(pp.Child("name"), ""))
		case p.Name != "":
			errs = append(errs, invalidEach(pp.Child("name"), p.Name, validation.IsDNS1123Label(p.Name))...)
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		errs = append(errs, invalidEach(pp.Child("port"), p.Port, validation.IsValidPortNum(int(p.Port)))...)
		if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP && p.Protocol != v1.ProtocolSCTP {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, []string{"TCP", "UDP", "SCTP"}))
		}
		errs = append(errs, validateTargetPort(p.TargetPort, pp.Child("targetPort"))...)
		errs = append(errs, validateNodePort(spec.Type, p, pp.Child("nodePort"), nodePorts)...)
	}
	return errs
}

func validateTargetPort(tp intstr.IntOrString, path *field.Path) field.ErrorList {
	if tp.Type == intstr.String {
		return invalidEach(path, tp.StrVal, validation.IsValidPortName(tp.StrVal))
	}
	return invalidEach(path, tp.IntVal, validation.IsValidPortNum(int(tp.IntVal)))
}

func validateNodePort(typ v1.ServiceType, p v1.ServicePort, path *field.Path, seen map[string]bool) field.ErrorList {
	if p.NodePort == 0 {
		return nil
	}
	if typ != v1.ServiceTypeNodePort && typ != v1.ServiceTypeLoadBalancer {
		return field.ErrorList{field.Forbidden(path, "may not be used when `type` is '"+string(typ)+"'")}
	}
	if p.NodePort < NodePortMin || p.NodePort > NodePortMax {
		return field.ErrorList{field.Invalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", NodePortMin, NodePortMax))}
	}
	key := fmt.Sprintf("%s/%d", p.Protocol, p.NodePort)
	if seen[key] {
		return field.ErrorList{field.Duplicate(path, p.NodePort)}
	}
	seen[key] = true
	return nil
}
