// Package userns is what berth knows of Linux user namespaces for pods
// that run in one (CRI UserNamespace mode POD, Kubernetes hostUsers:
// false): the id mappings and their rules (one mapping, container id 0
// first, never the host's root, within the allowed host range, not
// overlapping another pod's), the allowed range from /etc/subuid and
// /etc/subgid, a short-lived holder process that creates a user namespace
// (and namespaces it owns) for berth to pin, and the probe of whether the
// kernel can idmap mounts of a filesystem.
//
// It runs nothing in the namespaces it makes: the holder is killed once
// its namespaces are pinned.
package userns
