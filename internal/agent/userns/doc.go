// Package userns gives pods with `spec.hostUsers: false` their user
// namespace, as kubelet's UsernsManager does: each such pod gets a block of
// 65536 host ids of its own, mapped to ids 0-65535 inside (uids and gids
// alike), and the CRI UserNamespace the agent sends for its sandbox and
// containers (Mode POD, one mapping {0, first host id, 65536} for uids and
// the same for gids). Every other pod runs in the host's user namespace
// (Mode NODE, no mappings), which kubelet 1.37 spells out too.
//
// The blocks come from one range of host ids (Range): the entries of user
// "berth" in /etc/subuid and /etc/subgid when it has any (one line each,
// the same in both), else kubelet's default, ids 65536 to 2^32-1. The
// range's first id must be a multiple of 65536 and not below it (id 0 is
// never mapped), its length a multiple of 65536, and it must hold a block
// for each of the node's max pods; anything else is an error at start.
// Blocks are picked at random among the free ones, as kubelet does, so a
// block just freed is seldom the next one handed out.
//
// An allocation is written before it is handed out, one file per pod under
// the manager's directory (<uid>.json, 0600, written atomically, a
// versioned record), so it survives restarts and kill -9: Open reads them
// all back before anything is allocated, and a block on record is never
// handed to another pod. A record Open cannot read, or one that does not
// fit the range, stops it with an error naming the file, as kubelet refuses
// to start: freeing a block that may be in use would let two pods share
// host ids. Release removes the record first and frees the block after;
// CleanupOrphans releases the blocks of pods the caller no longer knows
// (kubelet's CleanupOrphanedPodUsernsAllocations).
//
// Before a pod gets a block its runtime handler must say, in the runtime's
// CRI Status, that it supports user namespaces; otherwise the pod's
// sandbox is refused with kubelet's reason. The package does no I/O
// besides its directory and the two files it is given.
package userns
