// Package sourcestore keeps the ConfigMaps and Secrets each pod refers to
// on the agent's side, so that a restarted agent (even after kill -9)
// finds them again without putting their contents into CRI metadata,
// where anyone who can inspect a sandbox would read the Secrets and where
// large ConfigMaps would outgrow the CRI's message limits.
//
// The store is a directory only root can enter (0700, the agent's
// <root>/sources): one file per pod uid (or workload uid: the sources its
// pod template refers to), <uid>.json (0600, written
// atomically with store.SaveJSON), holding the pod's podspec.Sources as
// they are now (rewritten when they change) and the pod's IPs from when its
// sandbox was ready (SavePodIPs: the runtime forgets them once the sandbox
// stops, while the status of a completed pod keeps them, across a restart
// of the agent too), and digest.key, a random key
// made on first use. Refs gives the podspec.SourceRefs a sandbox carries
// instead of the contents: each source's name and an HMAC-SHA-256 of its
// content under that key, so that the digests tell nothing of a Secret to
// whoever reads the annotation, and Compare tells, at recovery, which
// sources the store lacks or holds in another version. Digest is that
// keyed hash for other secrets of the agent's (the credential hashes of
// package pullrecords): one key, one rule.
//
// Remove drops a deleted pod's file; RemoveExcept drops the files of pods
// that are gone (recovery's garbage collection). Uids that are not usable
// as file names are refused.
package sourcestore
