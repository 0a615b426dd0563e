package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetDefaults applies the API server's defaults to every object of b, and
// gives pods without a UID their deterministic one (Decode gives every pod
// its own, ignoring a manifest's). Decode already does
// this; SetDefaults is for bundles built by hand and is idempotent. Map keys
// are not recomputed: build bundles with a namespace, or through Merge.
func (b *Bundle) SetDefaults() {
	for _, p := range b.Pods {
		setPodDefaults(p.Pod, p.Source)
	}
	for _, cm := range b.ConfigMaps {
		setConfigMapDefaults(cm)
	}
	for _, s := range b.Secrets {
		setSecretDefaults(s)
	}
	for _, d := range b.Deployments {
		setDeploymentDefaults(d.Deployment)
	}
	for _, rs := range b.ReplicaSets {
		setReplicaSetDefaults(rs.ReplicaSet)
	}
	for _, ds := range b.DaemonSets {
		setDaemonSetDefaults(ds.DaemonSet)
	}
	for _, s := range b.StatefulSets {
		setStatefulSetDefaults(s.StatefulSet)
	}
	for _, c := range b.PersistentVolumeClaims {
		setPVCDefaults(c.PersistentVolumeClaim)
	}
	for _, s := range b.Services {
		setServiceDefaults(s.Service)
	}
	for _, j := range b.Jobs {
		setJobDefaults(j.Job)
	}
	for _, cj := range b.CronJobs {
		setCronJobDefaults(cj.CronJob)
	}
	for _, s := range b.Skipped {
		setSkippedDefaults(s)
	}
}

func setConfigMapDefaults(cm *v1.ConfigMap) {
	if cm.Namespace == "" {
		cm.Namespace = metav1.NamespaceDefault
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

func setSecretDefaults(s *v1.Secret) {
	if s.Namespace == "" {
		s.Namespace = metav1.NamespaceDefault
	}
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
}

// setPodDefaults defaults pod as the API server does on create, then gives
// it a UID derived from its content and source if it has none.
func setPodDefaults(pod *v1.Pod, source string) {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	setFullPodSpecDefaults(&pod.Spec)
	if pod.UID == "" {
		pod.UID = staticPodUID(pod, source)
	}
}

// setFullPodSpecDefaults defaults a pod's (or a pod template's) spec, its
// volumes and containers.
func setFullPodSpecDefaults(spec *v1.PodSpec) {
	setPodSpecDefaults(spec)
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
	for _, c := range allContainers(spec) {
		setContainerDefaults(c)
	}
	for _, c := range append(containerPointers(spec.InitContainers), containerPointers(spec.Containers)...) {
		defaultRequestsToLimits(&c.Resources)
		if spec.HostNetwork {
			defaultHostPortsToContainerPorts(c.Ports)
		}
	}
	roundUpQuantities(spec.Overhead)
}

func setPodSpecDefaults(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(int64(v1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptrTo(v1.DefaultEnableServiceLinks)
	}
}

func setVolumeDefaults(vol *v1.Volume) {
	source := &vol.VolumeSource
	if len(volumeSourceTypes(source)) == 0 {
		source.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if source.HostPath != nil && source.HostPath.Type == nil {
		source.HostPath.Type = ptrTo(v1.HostPathUnset)
	}
	if source.ConfigMap != nil && source.ConfigMap.DefaultMode == nil {
		source.ConfigMap.DefaultMode = ptrTo(v1.ConfigMapVolumeSourceDefaultMode)
	}
	if source.Secret != nil && source.Secret.DefaultMode == nil {
		source.Secret.DefaultMode = ptrTo(v1.SecretVolumeSourceDefaultMode)
	}
	if source.DownwardAPI != nil {
		if source.DownwardAPI.DefaultMode == nil {
			source.DownwardAPI.DefaultMode = ptrTo(v1.DownwardAPIVolumeSourceDefaultMode)
		}
		setDownwardAPIFileDefaults(source.DownwardAPI.Items)
	}
	if source.Projected != nil {
		setProjectedDefaults(source.Projected)
	}
	if source.Image != nil && source.Image.PullPolicy == "" {
		source.Image.PullPolicy = defaultPullPolicy(source.Image.Reference)
	}
}

func setProjectedDefaults(projected *v1.ProjectedVolumeSource) {
	if projected.DefaultMode == nil {
		projected.DefaultMode = ptrTo(v1.ProjectedVolumeSourceDefaultMode)
	}
	for i := range projected.Sources {
		source := &projected.Sources[i]
		if source.DownwardAPI != nil {
			setDownwardAPIFileDefaults(source.DownwardAPI.Items)
		}
		if source.ServiceAccountToken != nil && source.ServiceAccountToken.ExpirationSeconds == nil {
			source.ServiceAccountToken.ExpirationSeconds = ptrTo(int64(3600))
		}
	}
}

func setDownwardAPIFileDefaults(files []v1.DownwardAPIVolumeFile) {
	for i := range files {
		setFieldSelectorDefaults(files[i].FieldRef)
	}
}

func setFieldSelectorDefaults(selector *v1.ObjectFieldSelector) {
	if selector != nil && selector.APIVersion == "" {
		selector.APIVersion = "v1"
	}
}

func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if c.Env[i].ValueFrom != nil {
			setFieldSelectorDefaults(c.Env[i].ValueFrom.FieldRef)
		}
	}
	roundUpQuantities(c.Resources.Limits)
	roundUpQuantities(c.Resources.Requests)
	for _, probe := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(probe)
	}
	if c.Lifecycle != nil {
		for _, hook := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if hook != nil {
				setHTTPGetDefaults(hook.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy is Always for an image tagged "latest" or neither tagged
// nor pinned by digest, and IfNotPresent otherwise.
func defaultPullPolicy(image string) v1.PullPolicy {
	name, _, pinned := strings.Cut(image, "@")
	tag := ""
	lastComponent := name[strings.LastIndex(name, "/")+1:]
	if i := strings.LastIndex(lastComponent, ":"); i >= 0 {
		tag = lastComponent[i+1:]
	}
	if tag == "latest" || (tag == "" && !pinned) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

func setProbeDefaults(probe *v1.Probe) {
	if probe == nil {
		return
	}
	if probe.TimeoutSeconds == 0 {
		probe.TimeoutSeconds = 1
	}
	if probe.PeriodSeconds == 0 {
		probe.PeriodSeconds = 10
	}
	if probe.SuccessThreshold == 0 {
		probe.SuccessThreshold = 1
	}
	if probe.FailureThreshold == 0 {
		probe.FailureThreshold = 3
	}
	setHTTPGetDefaults(probe.HTTPGet)
	if probe.GRPC != nil && probe.GRPC.Service == nil {
		probe.GRPC.Service = ptrTo("")
	}
}

func setHTTPGetDefaults(action *v1.HTTPGetAction) {
	if action == nil {
		return
	}
	if action.Path == "" {
		action.Path = "/"
	}
	if action.Scheme == "" {
		action.Scheme = v1.URISchemeHTTP
	}
}

// defaultRequestsToLimits copies each limit without a request into requests.
func defaultRequestsToLimits(resources *v1.ResourceRequirements) {
	if resources.Limits == nil {
		return
	}
	if resources.Requests == nil {
		resources.Requests = v1.ResourceList{}
	}
	for name, limit := range resources.Limits {
		if _, found := resources.Requests[name]; !found {
			resources.Requests[name] = limit.DeepCopy()
		}
	}
}

// defaultHostPortsToContainerPorts: with host networking a container port is
// a host port.
func defaultHostPortsToContainerPorts(ports []v1.ContainerPort) {
	for i := range ports {
		if ports[i].HostPort == 0 {
			ports[i].HostPort = ports[i].ContainerPort
		}
	}
}

// roundUpQuantities rounds quantities up to milli units, as the API does.
func roundUpQuantities(list v1.ResourceList) {
	for name, quantity := range list {
		quantity.RoundUp(resource.Milli)
		list[name] = quantity
	}
}

// allContainers returns pointers to the init, regular and ephemeral
// containers of spec, in that order.
func allContainers(spec *v1.PodSpec) []*v1.Container {
	containers := append(containerPointers(spec.InitContainers), containerPointers(spec.Containers)...)
	for i := range spec.EphemeralContainers {
		containers = append(containers, (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return containers
}

func containerPointers(containers []v1.Container) []*v1.Container {
	pointers := make([]*v1.Container, len(containers))
	for i := range containers {
		pointers[i] = &containers[i]
	}
	return pointers
}

func ptrTo[T any](v T) *T { return &v }
