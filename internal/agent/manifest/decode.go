package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The core "v1" kinds berth reads (workload.go has the apps/v1 ones).
const (
	kindPod       = "Pod"
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"
	kindList      = "List"
)

// Decode reads every document of r (YAML separated by "---", or a stream of
// JSON objects) into a Bundle, with defaults applied (see SetDefaults).
// source names r in the objects (Pod.Source, ...) and in errors: a file
// path, or "-" for stdin. Any problem, in any document, fails the whole
// source with an *InvalidError listing them all.
func Decode(r io.Reader, source string) (*Bundle, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, invalid([]Problem{{Source: source, Err: err}})
	}
	return decodeSource(data, source)
}

func decodeSource(data []byte, source string) (*Bundle, error) {
	b := &Bundle{}
	b.ensureMaps()
	var problems []Problem
	for _, doc := range splitDocuments(data) {
		problems = append(problems, decodeDocument(b, doc, source)...)
	}
	if len(problems) > 0 {
		return nil, invalid(problems)
	}
	return b, nil
}

func decodeDocument(b *Bundle, doc document, source string) []Problem {
	if doc.err != nil {
		return []Problem{{Source: source, Object: doc.name(), Err: doc.err}}
	}
	data := doc.data
	if !doc.json {
		converted, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return []Problem{{Source: source, Object: doc.name(), Err: err}}
		}
		data = converted
	}
	if string(bytes.TrimSpace(data)) == "null" {
		return nil // only comments
	}
	return decodeObject(b, data, source, doc.name())
}

// objectHead is what decoding needs to know before choosing a type.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// decodeObject decodes one JSON object into b. location names the document
// (or List item) for problems found before the object's name is known.
func decodeObject(b *Bundle, data []byte, source, location string) []Problem {
	fail := func(object string, err error) []Problem {
		return []Problem{{Source: source, Object: object, Err: err}}
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		return fail(location, errors.New("not an object: each document must be a mapping with apiVersion, kind and metadata"))
	}
	var head objectHead
	_ = json.Unmarshal(data, &head) // type errors are reported by the strict decode below
	object := location
	switch {
	case head.Kind != "" && head.Metadata.Name != "":
		object = objectName(head.Kind, &metav1.ObjectMeta{Name: head.Metadata.Name, Namespace: head.Metadata.Namespace})
	case head.Kind != "":
		object = head.Kind + " in " + location
	}
	if err := checkKind(head); err != nil {
		return fail(object, err)
	}
	if _, skipped := skipKinds[head.Kind]; skipped {
		return decodeSkipped(b, data, source, object, head)
	}
	switch head.Kind {
	case kindPod:
		return decodeTyped(b, data, source, object, &v1.Pod{})
	case kindConfigMap:
		return decodeTyped(b, data, source, object, &v1.ConfigMap{})
	case kindSecret:
		return decodeTyped(b, data, source, object, &v1.Secret{})
	case kindDeployment:
		d := &appsv1.Deployment{}
		problems := decodeTyped(b, data, source, object, d)
		markKeepPaused(b, d, data)
		return problems
	case kindReplicaSet:
		return decodeTyped(b, data, source, object, &appsv1.ReplicaSet{})
	case kindDaemonSet:
		return decodeTyped(b, data, source, object, &appsv1.DaemonSet{})
	case kindStatefulSet:
		return decodeTyped(b, data, source, object, &appsv1.StatefulSet{})
	case kindPersistentVolumeClaim:
		return decodeTyped(b, data, source, object, &v1.PersistentVolumeClaim{})
	case kindService:
		return decodeTyped(b, data, source, object, &v1.Service{})
	case kindJob:
		return decodeTyped(b, data, source, object, &batchv1.Job{})
	case kindCronJob:
		return decodeTyped(b, data, source, object, &batchv1.CronJob{})
	default:
		return decodeList(b, data, source, location)
	}
}

// apiVersions maps each kind berth reads to its apiVersion.
var apiVersions = map[string]string{
	kindPod: "v1", kindConfigMap: "v1", kindSecret: "v1", kindList: "v1",
	kindDeployment: appsV1, kindReplicaSet: appsV1,
	kindDaemonSet:   appsV1,
	kindStatefulSet: appsV1, kindPersistentVolumeClaim: "v1",
	kindService: "v1",
	kindJob:     batchV1, kindCronJob: batchV1,
}

// checkKind refuses a kind berth neither reads nor skips, or an apiVersion
// the kind does not have.
func checkKind(head objectHead) error {
	var wants []string
	if want, known := apiVersions[head.Kind]; known {
		wants = []string{want}
	} else if k, skipped := skipKinds[head.Kind]; skipped {
		wants = k.versions
	}
	switch {
	case head.Kind == "":
		return errors.New(`missing "kind"`)
	case wants == nil:
		return fmt.Errorf("unsupported kind %q (apiVersion %q): berth reads only v1 Pod, ConfigMap, Secret, PersistentVolumeClaim, Service and List, apps/v1 Deployment, ReplicaSet, StatefulSet and DaemonSet, and batch/v1 Job and CronJob, and skips, with a warning, the cluster kinds it does not apply on one node (%s)", head.Kind, head.APIVersion, skippedKindNames())
	case head.APIVersion == "":
		return fmt.Errorf(`missing "apiVersion" (want %q)`, wants[0])
	case !slices.Contains(wants, head.APIVersion):
		return fmt.Errorf("unsupported apiVersion %q for kind %s: want %s", head.APIVersion, head.Kind, quotedAlternatives(wants))
	}
	return nil
}

// quotedAlternatives renders `"a"` or `"a" or "b"`.
func quotedAlternatives(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	return strings.Join(quoted, " or ")
}

// decodeTyped strictly decodes data into object (a *v1.Pod, *v1.ConfigMap
// or *v1.Secret), normalizes it as the API server does on create, and adds
// it to b.
func decodeTyped(b *Bundle, data []byte, source, object string, into any) []Problem {
	if errs := unmarshalStrict(data, into); len(errs) > 0 {
		problems := make([]Problem, len(errs))
		for i, err := range errs {
			problems[i] = Problem{Source: source, Object: object, Err: err}
		}
		return problems
	}
	given := ""
	switch o := into.(type) {
	case *v1.Pod:
		o.Status = v1.PodStatus{}
		given, o.UID = string(o.UID), "" // a manifest's uid is ignored: the pod's is derived
		setPodDefaults(o, source)
	case *v1.ConfigMap:
		setConfigMapDefaults(o)
	case *v1.Secret:
		mergeStringData(o)
		setSecretDefaults(o)
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
		setDeploymentDefaults(o)
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
		setReplicaSetDefaults(o)
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
		setDaemonSetDefaults(o)
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
		setStatefulSetDefaults(o)
	case *v1.PersistentVolumeClaim:
		o.Status = v1.PersistentVolumeClaimStatus{}
		setPVCDefaults(o)
	case *v1.Service:
		setServiceDefaults(o)
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
		setJobDefaults(o)
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
		setCronJobDefaults(o)
	}
	single := singleObject(into, source)
	if len(single.Pods) == 1 && given != "" && given != string(single.Pods[0].UID) {
		single.Pods[0].IgnoredUID = given
	}
	return problemsOf(b.Merge(single), source)
}

// unmarshalStrict decodes like the API server with strict field validation:
// field names match case-sensitively, and unknown or duplicate fields are
// errors naming the field's path.
func unmarshalStrict(data []byte, into any) []error {
	strictErrs, err := strictjson.UnmarshalStrict(data, into)
	if err != nil {
		return []error{err}
	}
	return strictErrs
}

// list is a v1 List; its items are decoded one by one.
type list struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

func decodeList(b *Bundle, data []byte, source, location string) []Problem {
	var l list
	if errs := unmarshalStrict(data, &l); len(errs) > 0 {
		problems := make([]Problem, len(errs))
		for i, err := range errs {
			problems[i] = Problem{Source: source, Object: location, Err: err}
		}
		return problems
	}
	var problems []Problem
	for i, item := range l.Items {
		problems = append(problems, decodeObject(b, item, source, fmt.Sprintf("%s items[%d]", location, i))...)
	}
	return problems
}

// mergeStringData folds a Secret's write-only stringData into data, the
// stringData value winning, as the API server does.
func mergeStringData(s *v1.Secret) {
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for key, value := range s.StringData {
		s.Data[key] = []byte(value)
	}
	s.StringData = nil
}
