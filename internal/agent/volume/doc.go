// Package volume materializes a pod's volumes on the host, the kubelet's
// volume manager reduced to the kinds that need no cluster: emptyDir (a
// directory, or a tmpfs for medium Memory), hostPath (checked or created
// by type), persistentVolumeClaim (the claim's directory, found through
// Manager.Claims: the agent's claims store), configMap, secret, downwardAPI and projected (files generated
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
// does it by eviction); ephemeral and the network volume kinds (Setup
// reports them unsupported); an image volume has nothing on the host (the
// runtime mounts it: CRI Mount.image) and no path; serviceAccountToken
// projections write nothing (there is no API server to issue tokens), and
// clusterTrustBundle / podCertificate projections are refused.
//
// Manager.MountSubPath is the agent's podspec.ContainerOptions.ResolveSubPath
// (subpath*.go). A volumeMount's subPath is resolved by name with the
// kernel's rules, so symlinks that stay inside the volume work and one that
// leads out is refused; then the result is walked again on descriptors from
// the volume's (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS),
// missing directories are made with mkdirat and given the volume's mode
// with fchmod, and the target's O_PATH descriptor is bind-mounted through
// /proc/self/fd on <pod>/volume-subpaths/<volume>/<container>/<mount index>,
// which the runtime then mounts into the container. A container that
// swaps a directory of the volume for a symlink meanwhile makes this fail;
// it cannot make the mount, a new directory or a mode change land outside
// the volume. A later instance of the container replaces its mounts there.
//
// Teardown unmounts everything under a pod's directory (tmpfs volumes and
// subPath mounts) and removes it; TeardownOrphans does it for every pod not
// kept.
package volume
