// Package manifest owns the agent's input: Kubernetes YAML or JSON turned
// into Pods, ConfigMaps and Secrets (k8s.io/api/core/v1 types) with the API
// server's defaults applied and the API server's validation run on them.
// Nothing downstream (podspec, volume, plan, the agent) re-checks what this
// package accepts.
//
// # Decoding
//
//	type Pod struct { *v1.Pod; Source string }
//	type Bundle struct {
//		Pods             []*Pod
//		ConfigMaps       map[string]*v1.ConfigMap // by ObjectKey(namespace, name)
//		Secrets          map[string]*v1.Secret
//		ConfigMapSources map[string]string        // source of each, same keys
//		SecretSources    map[string]string
//	}
//	func Load(path string, stdin io.Reader) (*Bundle, error)  // file, directory, or "-" for stdin
//	func Decode(r io.Reader, source string) (*Bundle, error)
//	func (b *Bundle) Merge(o *Bundle) error
//	func (b *Bundle) Pod(namespace, name string) *Pod
//	func (b *Bundle) Referenced(pod *v1.Pod) ([]*v1.ConfigMap, []*v1.Secret)
//	func ObjectKey(namespace, name string) string
//
// A source holds one or more documents (YAML separated by "---", or a JSON
// stream). Each document is a v1 Pod, ConfigMap, Secret, an apps/v1
// Deployment, ReplicaSet or DaemonSet (Bundle.Deployments,
// Bundle.ReplicaSets, Bundle.DaemonSets, each with its Source; workload.go,
// daemonset.go, defaults_workload.go,
// validate_workload.go: the API server's apps/v1 defaults and checks, the
// template validated as a pod with restartPolicy Always), a batch/v1 Job
// or CronJob (Bundle.Jobs, Bundle.CronJobs; job.go, validate_job.go: the
// API server's batch/v1 defaults and checks, the template's restartPolicy
// OnFailure or Never, the schedule and timeZone as package workload parses
// them; validate_jobindex.go: backoffLimitPerIndex, maxFailedIndexes and
// successPolicy; a manual selector is refused, naming the field), or a v1 Service (Bundle.Services; service.go:
// the API server's defaults and checks), or a v1 List of
// them. Objects of the cluster kinds berth does not apply on one node
// (skipped.go's skipKinds, one table: Namespace, ServiceAccount, RBAC,
// Ingress, IngressClass, NetworkPolicy, HorizontalPodAutoscaler,
// PodDisruptionBudget, PriorityClass, ResourceQuota, LimitRange,
// StorageClass, each with the API versions a current API server serves
// and the reason) are kept as Bundle.Skipped: apiVersion, kind and strict
// metadata only (a namespaced one defaults to "default", a cluster-scoped
// one loses its namespace and is named "Namespace shop" in problems),
// checked by Validate as the API server checks metadata, and reported,
// never applied. Any other kind is refused, naming the file and the kind. Decoding is
// strict like `kubectl --validate=strict`: unknown or duplicated fields are
// errors naming the field path (spec.containers[0].imagePulPolicy). A
// directory contributes its *.yaml, *.yml and *.json files in name order,
// not recursing and skipping dotfiles. A Secret's stringData is merged into
// data (stringData wins) and cleared, as the API server does; a Pod's status
// is dropped, as on create. Every object remembers its source: Pod.Source,
// Bundle.ConfigMapSources, Bundle.SecretSources. Merge refuses an object
// defined twice and names both sources.
//
// Loading does not validate: merge every source first, then call Validate,
// so that references from one file to another resolve.
//
// Errors are an *InvalidError: one Problem (Source, Object, Err) per line,
// all of them, not just the first.
//
// # Defaults
//
// Decode (and so Load) applies the API server's defaults to what it decodes
// (func (b *Bundle) SetDefaults() does it again, idempotently, for
// hand-built bundles):
// namespace "default", restartPolicy Always, dnsPolicy ClusterFirst,
// terminationGracePeriodSeconds 30, securityContext {}, enableServiceLinks,
// schedulerName; per container imagePullPolicy (Always for a :latest or
// untagged, undigested image, otherwise IfNotPresent), terminationMessagePath
// and -Policy, port protocol TCP, requests copied from limits, probe timings
// and httpGet path/scheme, env fieldRef apiVersion v1; per volume emptyDir
// when no source is given, modes 0644, hostPath type "", token expiry 1 h,
// an image volume's pullPolicy as a container's imagePullPolicy;
// with hostNetwork, hostPort = containerPort. Quantities are rounded up to
// milli units. A Secret gets type Opaque, a ConfigMap a non-nil data map.
//
// Every decoded Pod gets a deterministic uid, as the kubelet gives static
// pods one without a uid: the first 16 bytes of SHA-256 over the pod's
// absolute source path and its defaulted JSON (uid and status left out), as
// 32 hex digits. A metadata.uid in the manifest is ignored, as the API
// server ignores it on create (Pod.IgnoredUID keeps it for apply's
// warning): a pod's identity is its namespace/name, and its uid is the
// agent's, so no manifest can name another pod's. SetDefaults, for bundles
// built by hand, gives one only to a pod that has none.
// Loading the same file again gives the same UID; any change to the pod
// (spec, labels, annotations, name) or to the file's location gives a new
// one, which tells the agent to replace the pod. Spelling out a default
// does not change the UID.
//
// # Validation
//
//	func (b *Bundle) Validate() error
//
// Validate runs the API server's create-time checks (metadata, containers,
// ports, env, volumes and mounts, probes and hooks, resources, security
// context, DNS, restart policies, sidecars) plus the checks berth needs to
// run a pod on one machine: references to ConfigMaps, Secrets and their keys
// must resolve inside the bundle unless marked optional, host ports must not
// collide across pods, labels and annotations must not use the keys berth
// sets on sandboxes and containers itself (berth.dev/ and its subdomains,
// io.kubernetes.pod., io.kubernetes.container., io.kubernetes.cri.,
// kubernetes.io/config.: podspec.ReservedKey), mount and hostPath paths must
// be absolute, named probe ports must exist, and only volume types the
// agent can build (emptyDir, hostPath, configMap, secret, downwardAPI,
// projected configMap / secret / downwardAPI), image volumes (a reference
// required, as the API server has it; the runtime mounts them) and Linux
// pods are accepted. Every problem of the bundle is
// collected into one *InvalidError; each names the source, the object and the
// field path:
//
//	pod.yaml: Pod default/web: spec.containers[1].name: Duplicate value: "app"
//
// # Watching
//
//	func Watch(ctx context.Context, dir string, interval time.Duration, recheck <-chan struct{}, onChange func(*Bundle, error))
//
// Watch plays the kubelet's static-pod directory: it calls onChange with the
// directory's bundle at start and after every change (inotify, debounced,
// with a periodic rescan as a safety net), and when its caller asks
// (recheck: a scan reported even unchanged). A file with any problem (it does
// not decode, holds no object — most likely it is being written in place —,
// duplicates an object of an earlier file, or holds an invalid
// object, or a pod whose references only an invalid file could satisfy)
// contributes nothing; the bundle holds every other file's objects, and the
// error (an *InvalidError) names the files left out, so a caller can keep what
// it runs from them. A nil bundle means the directory itself could not be
// read, or was refused: whoever can change a watched directory decides what
// runs as root, so every scan first checks it with
//
//	func CheckTrustedDir(dir string) error
//
// (the directory and every one above it owned by root, or the caller, and
// writable by no one else; a sticky directory above it, as /tmp, may be
// world-writable; no symbolic link on the path).
package manifest
