// Package volume materializes a pod's volumes on the host, the kubelet's
// volume manager reduced to the kinds that need no cluster: emptyDir (a
// directory, or a tmpfs for medium Memory), hostPath (checked or created
// by type), configMap, secret, downwardAPI and projected (files generated
// from the pod's Sources and the downward API).
//
// Layout: <Root>/pods/<uid>/volumes/<plugin>/<name>, plugin named like the
// kubelet's (kubernetes.io~empty-dir, ~configmap, ~secret, ~downward-api,
// ~projected); hostPath volumes are the host path itself. Secret,
// downwardAPI and projected volumes sit on their own small tmpfs so their
// contents never reach a disk; configMap volumes are plain directories.
//
// Generated volumes are updated atomically on every Setup (see atomic.go):
// a new timestamped version directory, then one rename of the ..data link,
// with per-name links into ..data; readers see the old or the new version,
// never a mix. Files take the item's mode, else defaultMode, else 0644; with
// a pod fsGroup they belong to that group and are group-readable, and
// emptyDirs belong to it with the setgid bit.
//
// Not covered: an on-disk emptyDir's sizeLimit is not enforced (the kubelet
// does it by eviction); persistentVolumeClaim, ephemeral, image and the network
// volume kinds (Setup reports them unsupported); serviceAccountToken
// projections write nothing (there is no API server to issue tokens), and
// clusterTrustBundle / podCertificate projections are refused.
//
// SafeSubPath resolves a volumeMount's subPath and refuses one that leads
// out of the volume through symlinks; the agent hands it to
// podspec.ContainerOptions.ResolveSubPath. Teardown unmounts and removes a
// pod's directory; TeardownOrphans does it for every pod not kept.
package volume
