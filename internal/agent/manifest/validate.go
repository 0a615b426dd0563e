package manifest

import (
	"encoding/json"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// Validate checks every object of b as the API server checks it on create,
// plus what berth needs to run the pods on this machine (see the package
// documentation). It returns nil or an *InvalidError listing every problem,
// each naming the source, the object and the field. Validate expects
// defaults to be set, as Decode and Load do.
func (b *Bundle) Validate() error {
	problems := b.configObjectProblems()
	problems = append(problems, b.podProblems()...)
	problems = append(problems, b.workloadProblems()...)
	problems = append(problems, b.daemonSetProblems()...)
	problems = append(problems, b.statefulSetProblems()...)
	problems = append(problems, b.claimProblems()...)
	problems = append(problems, b.serviceProblems()...)
	problems = append(problems, b.jobProblems()...)
	problems = append(problems, b.skippedProblems()...)
	return invalid(problems)
}

// configObjectProblems validates the ConfigMaps and Secrets.
func (b *Bundle) configObjectProblems() []Problem {
	var problems []Problem
	for _, key := range sortedKeys(b.ConfigMaps) {
		cm := b.ConfigMaps[key]
		problems = append(problems, fieldProblems(b.ConfigMapSources[key], objectName(kindConfigMap, &cm.ObjectMeta), validateConfigMap(cm))...)
	}
	for _, key := range sortedKeys(b.Secrets) {
		s := b.Secrets[key]
		problems = append(problems, fieldProblems(b.SecretSources[key], objectName(kindSecret, &s.ObjectMeta), validateSecret(s))...)
	}
	return problems
}

// podProblems validates the pods, their references into the bundle and
// their host ports against each other's.
func (b *Bundle) podProblems() []Problem {
	var problems []Problem
	hostPorts := hostPortClaims{}
	for _, p := range b.Pods {
		name := objectName(kindPod, &p.ObjectMeta)
		errs := validatePod(p.Pod)
		errs = append(errs, b.validateReferences(p.Pod)...)
		errs = append(errs, hostPorts.claim(p.Pod, name)...)
		problems = append(problems, fieldProblems(p.Source, name, errs)...)
	}
	return problems
}

func validatePod(pod *v1.Pod) field.ErrorList {
	errs := validateObjectMeta(&pod.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validatePodUID(string(pod.UID), field.NewPath("metadata", "uid"))...)
	return append(errs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
}

// podUIDPattern is what a pod UID may look like: it names directories
// (the pod's volumes, its log directory <ns>_<name>_<uid>).
var podUIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validatePodUID checks a UID given in the manifest, or derived by
// SetDefaults (empty only when it could not be derived).
func validatePodUID(uid string, path *field.Path) field.ErrorList {
	switch {
	case uid == "":
		return field.ErrorList{field.Required(path, "the pod has no UID and none could be derived from it")}
	case !ValidUID(uid):
		return field.ErrorList{field.Invalid(path, uid, UIDRule)}
	}
	return nil
}

// UIDRule says what ValidUID accepts, for messages.
const UIDRule = "must be at most 128 letters, digits, '-', '_' or '.', starting with a letter or digit"

// ValidUID reports whether uid may name a directory or file of its
// object (a pod's volumes and log directory, a claim's volume): one path
// element, never "." or "..".
func ValidUID(uid string) bool { return len(uid) <= 128 && podUIDPattern.MatchString(uid) }

// validateObjectMeta checks name (a DNS-1123 subdomain), namespace (a
// DNS-1123 label), labels and annotations.
func validateObjectMeta(meta *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case meta.Name == "" && meta.GenerateName != "":
		errs = append(errs, field.Required(path.Child("name"), "generateName is not supported: give the object a name"))
	case meta.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	default:
		errs = append(errs, invalidEach(path.Child("name"), meta.Name, validation.IsDNS1123Subdomain(meta.Name))...)
	}
	if meta.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), ""))
	} else {
		errs = append(errs, invalidEach(path.Child("namespace"), meta.Namespace, validation.IsDNS1123Label(meta.Namespace))...)
	}
	errs = append(errs, validateLabelMap(meta.Labels, path.Child("labels"))...)
	errs = append(errs, validateAnnotations(meta.Annotations, path.Child("annotations"))...)
	errs = append(errs, apivalidation.ValidateOwnerReferences(meta.OwnerReferences, path.Child("ownerReferences"))...)
	return append(errs, apivalidation.ValidateFinalizers(meta.Finalizers, path.Child("finalizers"))...)
}

// validateLabelMap checks label keys (qualified names) and values, in key
// order.
func validateLabelMap(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, key := range sortedKeys(labels) {
		errs = append(errs, invalidEach(path, key, validation.IsQualifiedName(key))...)
		errs = append(errs, reservedKey(path, key)...)
		errs = append(errs, invalidEach(path, labels[key], validation.IsValidLabelValue(labels[key]))...)
	}
	return errs
}

func validateAnnotations(annotations map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, key := range sortedKeys(annotations) {
		errs = append(errs, invalidEach(path, key, validation.IsQualifiedName(strings.ToLower(key)))...)
		errs = append(errs, reservedKey(path, key)...)
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		errs = append(errs, field.TooLong(path, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// reservedKey refuses a label or annotation key berth sets itself on
// sandboxes and containers (berth.dev/, the kubelet's keys): the agent
// would read it back as its own.
func reservedKey(path *field.Path, key string) field.ErrorList {
	if !podspec.ReservedKey(key) {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Key(key), key,
		"reserved: berth sets berth.dev/, io.kubernetes.pod., io.kubernetes.container., io.kubernetes.cri. and kubernetes.io/config. keys itself")}
}

func validateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&cm.ObjectMeta, field.NewPath("metadata"))
	size := 0
	for _, key := range sortedKeys(cm.Data) {
		path := field.NewPath("data").Key(key)
		errs = append(errs, invalidEach(path, key, validation.IsConfigMapKey(key))...)
		if _, found := cm.BinaryData[key]; found {
			errs = append(errs, field.Invalid(path, key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		errs = append(errs, invalidEach(field.NewPath("binaryData").Key(key), key, validation.IsConfigMapKey(key))...)
		size += len(cm.BinaryData[key])
	}
	if size > v1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", v1.MaxSecretSize))
	}
	return errs
}

func validateSecret(s *v1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, field.NewPath("metadata"))
	dataPath := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		errs = append(errs, invalidEach(dataPath.Key(key), key, validation.IsConfigMapKey(key))...)
		size += len(s.Data[key])
	}
	if size > v1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", v1.MaxSecretSize))
	}
	return append(errs, validateSecretType(s, dataPath)...)
}

// validateSecretType checks the keys that typed Secrets must hold.
func validateSecretType(s *v1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	requireKeys := func(keys ...string) {
		for _, key := range keys {
			if _, found := s.Data[key]; !found {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	requireJSON := func(key string) {
		requireKeys(key)
		if value, found := s.Data[key]; found && json.Unmarshal(value, &map[string]any{}) != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", "must be a JSON object"))
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		requireJSON(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		requireJSON(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		_, hasUser := s.Data[v1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[v1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			requireKeys(v1.BasicAuthUsernameKey, v1.BasicAuthPasswordKey)
		}
	case v1.SecretTypeSSHAuth:
		if len(s.Data[v1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(v1.SSHAuthPrivateKey), ""))
		}
	case v1.SecretTypeTLS:
		requireKeys(v1.TLSCertKey, v1.TLSPrivateKeyKey)
	}
	return errs
}

// invalidEach turns the messages of a k8s.io/apimachinery validation
// function into Invalid errors for path.
func invalidEach(path *field.Path, value any, messages []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range messages {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}
