package manifest

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

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

// MaxClientIPAffinitySeconds is the longest sessionAffinityConfig.clientIP.timeoutSeconds.
const MaxClientIPAffinitySeconds = 86400

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
	setSessionAffinityDefaults(&s.Spec)
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

// setSessionAffinityDefaults defaults sessionAffinity to None (with no
// config) and a ClientIP affinity's timeoutSeconds to 10800, as the API
// server does.
func setSessionAffinityDefaults(spec *v1.ServiceSpec) {
	switch spec.SessionAffinity {
	case "", v1.ServiceAffinityNone:
		spec.SessionAffinity, spec.SessionAffinityConfig = v1.ServiceAffinityNone, nil
	case v1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptrTo(v1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
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

var serviceTypes = []string{"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}

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
		errs = append(errs, validateExternalName(spec, path)...)
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, serviceTypes))
	}
	if spec.ClusterIP != "" && !headless {
		if _, err := netip.ParseAddr(spec.ClusterIP); err != nil {
			errs = append(errs, field.Invalid(path.Child("clusterIP"), spec.ClusterIP, "must be a valid IP address or 'None'"))
		}
	}
	if len(spec.Ports) == 0 && !headless && spec.Type != v1.ServiceTypeExternalName {
		errs = append(errs, field.Required(path.Child("ports"), ""))
	}
	errs = append(errs, validateLabelMap(spec.Selector, path.Child("selector"))...)
	errs = append(errs, validateSessionAffinity(spec, path)...)
	errs = append(errs, validateExternalIPs(spec.ExternalIPs, path.Child("externalIPs"))...)
	return append(errs, validateServicePorts(spec, path.Child("ports"))...)
}

// validateExternalName checks an ExternalName Service as the API server
// does: no cluster IPs (not even None) nor IP families, and externalName
// a lowercase DNS-1123 subdomain (a trailing dot allowed).
func validateExternalName(spec *v1.ServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	const notSet = "may not be set for ExternalName services"
	if spec.ClusterIP != "" || len(spec.ClusterIPs) > 0 {
		errs = append(errs, field.Forbidden(path.Child("clusterIPs"), notSet))
	}
	if len(spec.IPFamilies) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ipFamilies"), notSet))
	}
	if spec.IPFamilyPolicy != nil {
		errs = append(errs, field.Forbidden(path.Child("ipFamilyPolicy"), notSet))
	}
	cname := strings.TrimSuffix(spec.ExternalName, ".")
	if cname == "" {
		return append(errs, field.Required(path.Child("externalName"), ""))
	}
	return append(errs, invalidEach(path.Child("externalName"), cname, validation.IsDNS1123Subdomain(cname))...)
}

// validateSessionAffinity: None or ClientIP, a ClientIP affinity's
// timeout 1-86400 seconds (defaulting gives it one; required without).
func validateSessionAffinity(spec *v1.ServiceSpec, path *field.Path) field.ErrorList {
	switch spec.SessionAffinity {
	case v1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			return field.ErrorList{field.Forbidden(path.Child("sessionAffinityConfig"), "must not be set when session affinity is None")}
		}
	case v1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			return field.ErrorList{field.Required(path.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), "")}
		}
		t := c.ClientIP.TimeoutSeconds
		if *t <= 0 || *t > MaxClientIPAffinitySeconds {
			return field.ErrorList{field.Invalid(path.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), *t,
				fmt.Sprintf("must be greater than 0 and less than %d", MaxClientIPAffinitySeconds))}
		}
	default:
		return field.ErrorList{field.NotSupported(path.Child("sessionAffinity"), spec.SessionAffinity, []string{"ClientIP", "None"})}
	}
	return nil
}

// validateExternalIPs checks externalIPs as the API server does (an IP
// address, not unspecified, loopback or link-local). The agent accepts
// them but does not serve them (a Warning event on the Service says so).
func validateExternalIPs(ips []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range ips {
		p := path.Index(i)
		if e := validation.IsValidIPForLegacyField(p, s, false, nil); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		ip := net.ParseIP(s)
		switch {
		case ip.IsUnspecified():
			errs = append(errs, field.Invalid(p, s, fmt.Sprintf("may not be unspecified (%v)", s)))
		case ip.IsLoopback():
			errs = append(errs, field.Invalid(p, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
		case ip.IsLinkLocalUnicast():
			errs = append(errs, field.Invalid(p, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
		case ip.IsLinkLocalMulticast():
			errs = append(errs, field.Invalid(p, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
		}
	}
	return errs
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
