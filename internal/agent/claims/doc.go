// Package claims is the node agent's volume provisioner for
// PersistentVolumeClaims: each claim is bound to a local directory of its
// own under the agent's root, as a local-path provisioner would, that
// outlives the pods using it, agent restarts and reboots, and goes only
// with the claim, by its reclaim policy.
//
// Layout (every directory 0700, so host users reach no claim's data; pods
// reach it through their bind mounts):
//
//	<dir>/<namespace>_<name>.json   the claim's record (0600, written atomically)
//	<dir>/volumes/pvc-<uid>/        its data (0777 as an emptyDir, for any uid in the pod)
//	<dir>/retained/pvc-<uid>/       the data of a deleted claim whose policy was Retain
//
// A claim's uid names its directory, so it must be one the manifest
// validation accepts for a uid (manifest.ValidUID: one path element); a
// record whose volume is not "pvc-<uid>" is never bound nor reclaimed.
//
// Intent comes first: Ensure writes the record as Pending before it makes
// the directory, then marks it Bound; Release marks it Released before it
// removes or moves the data. Open finishes what a crash interrupted.
//
// The requested size is recorded and reported as the volume's capacity;
// like a local-path or hostPath volume it is not enforced. A record the
// store cannot read is set aside (renamed *.unreadable, or *.unreadable.N
// beside an earlier one) and reported, and its data is left where it is.
package claims
