package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Skipped is an object of a cluster kind berth accepts but does not apply
// on its one node (skipKinds): a Namespace, a ServiceAccount, an Ingress...
// Only its apiVersion, kind and metadata are read; the rest (spec, rules,
// subjects...) is neither kept nor checked.
type Skipped struct {
	APIVersion        string `json:"apiVersion"`
	Kind              string `json:"kind"`
	metav1.ObjectMeta `json:"metadata"`
	// Source is the file the object came from, or "-" for stdin.
	Source string `json:"source"`
}

// Reason says why berth does not apply the object ("" for a kind it does
// not skip).
func (s *Skipped) Reason() string { return skipKinds[s.Kind].reason }

// Resource names the object's kind as kubectl prints it: lower-case kind,
// then the API group ("ingress.networking.k8s.io", "serviceaccount").
func (s *Skipped) Resource() string { return ResourceName(s.APIVersion, s.Kind) }

// ResourceName is kubectl's name of a kind in output such as
// "ingress.networking.k8s.io/web created": the kind in lower case, with
// ".<group>" unless the group is the core one.
func ResourceName(apiVersion, kind string) string {
	if group, _, found := strings.Cut(apiVersion, "/"); found {
		return strings.ToLower(kind) + "." + group
	}
	return strings.ToLower(kind)
}

// skipKind is a kind berth accepts and skips: the API versions a current
// API server serves (preferred first), whether its objects live in a
// namespace, the API server's rule for their names, and why a berth node
// does not apply them.
type skipKind struct {
	versions   []string
	namespaced bool
	validName  apivalidation.ValidateNameFunc
	reason     string
}

const noAPIServerRBAC = "no API server on a berth node to authorize requests: RBAC grants nothing"

// skipKinds is every kind berth skips, by kind (the names are unique across
// these groups). Any kind neither read nor listed here is refused.
var skipKinds = map[string]skipKind{
	"Namespace": {[]string{"v1"}, false, apivalidation.ValidateNamespaceName,
		"berth keeps no Namespace objects: every namespace a manifest names exists implicitly"},
	"ServiceAccount": {[]string{"v1"}, true, apivalidation.ValidateServiceAccountName,
		"no API server issues service account tokens: a pod's serviceAccountName is kept (the downward API reads it) and no token is mounted, as for kubelet's static pods"},
	"ResourceQuota": {[]string{"v1"}, true, apivalidation.NameIsDNSSubdomain,
		"no quota admission on a berth node: pods are not counted against it"},
	"LimitRange": {[]string{"v1"}, true, apivalidation.NameIsDNSSubdomain,
		"no LimitRanger admission on a berth node: containers get no default requests or limits from it"},
	"Ingress": {[]string{"networking.k8s.io/v1"}, true, apivalidation.NameIsDNSSubdomain,
		"no ingress controller on a berth node: expose the Service with type NodePort or LoadBalancer"},
	"IngressClass": {[]string{"networking.k8s.io/v1"}, false, apivalidation.NameIsDNSSubdomain,
		"no ingress controller on a berth node"},
	"NetworkPolicy": {[]string{"networking.k8s.io/v1"}, true, apivalidation.NameIsDNSSubdomain,
		"not enforced: berth filters no pod traffic by network policies"},
	"HorizontalPodAutoscaler": {[]string{"autoscaling/v2", "autoscaling/v1"}, true, apivalidation.NameIsDNSSubdomain,
		"no metrics pipeline or autoscaler on a berth node: the target keeps the replicas its manifest gives ('berth scale' changes them)"},
	"PodDisruptionBudget": {[]string{"policy/v1"}, true, apivalidation.NameIsDNSSubdomain,
		"no voluntary evictions on a berth node to budget (no drain, no Eviction API); node-pressure evictions ignore budgets, as kubelet's do"},
	"PriorityClass": {[]string{"scheduling.k8s.io/v1"}, false, apivalidation.NameIsDNSSubdomain,
		"berth resolves no priority classes: a pod's priorityClassName is kept and sets no priority; only system-node-critical and system-cluster-critical mark a pod critical"},
	"StorageClass": {[]string{"storage.k8s.io/v1"}, false, apivalidation.NameIsDNSSubdomain,
		"no provisioners on a berth node: every claim is a local directory, whatever its storageClassName"},
	"Role":               {[]string{"rbac.authorization.k8s.io/v1"}, true, validatePathSegmentName, noAPIServerRBAC},
	"RoleBinding":        {[]string{"rbac.authorization.k8s.io/v1"}, true, validatePathSegmentName, noAPIServerRBAC},
	"ClusterRole":        {[]string{"rbac.authorization.k8s.io/v1"}, false, validatePathSegmentName, noAPIServerRBAC},
	"ClusterRoleBinding": {[]string{"rbac.authorization.k8s.io/v1"}, false, validatePathSegmentName, noAPIServerRBAC},
}

// SkipReason says why berth skips objects of apiVersion and kind, and
// whether it does: false for a kind it reads, refuses, or an apiVersion a
// current API server does not serve for the kind.
func SkipReason(apiVersion, kind string) (string, bool) {
	k, found := skipKinds[kind]
	if !found || !slices.Contains(k.versions, apiVersion) {
		return "", false
	}
	return k.reason, true
}

// clusterScoped reports whether kind is one of the skipped kinds whose
// objects have no namespace.
func clusterScoped(kind string) bool {
	k, found := skipKinds[kind]
	return found && !k.namespaced
}

// skippedKindNames lists the skipped kinds, sorted, for messages.
func skippedKindNames() string {
	return strings.Join(sortedKeys(skipKinds), ", ")
}

// decodeSkipped reads an object of a skipped kind: its metadata strictly
// (unknown or duplicate fields are errors naming metadata.<field>), the
// rest only as far as to know it is an object.
func decodeSkipped(b *Bundle, data []byte, source, object string, head objectHead) []Problem {
	var top map[string]json.RawMessage
	errs := unmarshalStrict(data, &top)
	if len(errs) == 0 {
		metadata, err := json.Marshal(map[string]json.RawMessage{"metadata": top["metadata"]})
		if err != nil {
			errs = []error{err}
		}
		var envelope struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if errs = append(errs, unmarshalStrict(metadata, &envelope)...); len(errs) == 0 {
			s := &Skipped{APIVersion: head.APIVersion, Kind: head.Kind, ObjectMeta: envelope.Metadata, Source: source}
			setSkippedDefaults(s)
			return problemsOf(b.Merge(&Bundle{Skipped: []*Skipped{s}}), source)
		}
	}
	problems := make([]Problem, len(errs))
	for i, err := range errs {
		problems[i] = Problem{Source: source, Object: object, Err: err}
	}
	return problems
}

// setSkippedDefaults puts a namespaced object in "default" when it names
// none, and takes the namespace off a cluster-scoped one, as the API server
// clears it.
func setSkippedDefaults(s *Skipped) {
	switch {
	case clusterScoped(s.Kind):
		s.Namespace = ""
	case s.Namespace == "":
		s.Namespace = metav1.NamespaceDefault
	}
}

// skippedProblems checks the skipped objects as far as berth reads them:
// a kind and apiVersion of skipKinds, and metadata (the name by the kind's
// rule, a namespace for a namespaced kind, labels and annotations).
func (b *Bundle) skippedProblems() []Problem {
	var problems []Problem
	for _, s := range b.Skipped {
		name := objectName(s.Kind, &s.ObjectMeta)
		if _, ok := SkipReason(s.APIVersion, s.Kind); !ok {
			err := checkKind(objectHead{APIVersion: s.APIVersion, Kind: s.Kind})
			if err == nil {
				err = fmt.Errorf("kind %s is read, not skipped: send it as such", s.Kind)
			}
			problems = append(problems, Problem{Source: s.Source, Object: name, Err: err})
			continue
		}
		k := skipKinds[s.Kind]
		metaPath := field.NewPath("metadata")
		if s.Name == "" && s.GenerateName != "" {
			problems = append(problems, fieldProblems(s.Source, name, field.ErrorList{field.Required(metaPath.Child("name"), "generateName is not supported: give the object a name")})...)
			continue
		}
		errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, k.namespaced, k.validName, metaPath)
		problems = append(problems, fieldProblems(s.Source, name, errs)...)
	}
	return problems
}

// validatePathSegmentName is the API server's name rule for the RBAC
// kinds: any name that can be one segment of a URL path.
func validatePathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
