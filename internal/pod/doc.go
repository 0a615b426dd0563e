// Package pod owns pod sandboxes and their containers: their records, state
// machines, creation with rollback, exits and recovery after a daemon restart.
//
// Sandbox states:
//
//	creating ──► ready ──► notready ──► removing ──► (record deleted)
//	    │                                   ▲
//	    └──────── rollback / recovery ──────┘
//
// Container states:
//
//	creating ──► created ──► running ──► exited ──► removing ──► (deleted)
//	    │           │                       ▲
//	    │           └─ start fails / killed ┘
//	    └──── rollback / recovery (deleted)
//
// A created container is prepared (rootfs and bundle, no pid): runc runs
// it at StartContainer (`runc run --detach`, container_start.go). A record
// of an older berth, which ran `runc create` at CreateContainer, is created
// with its init's pid and is started with `runc start`.
//
// Every record is written atomically (internal/store) before the side
// effect it describes: a record in "creating" or "removing" tells recovery
// that side effects may exist half-made, and recovery undoes them. Those two
// intent states are flushed (fsync of file and directory), so a record is
// durable from its first write; the other states are flushed once, not
// their rename, a power loss taking a record back to a state recovery
// treats alike after a reboot (saveRecord). Files under the state directory (bundles, pod files, exit
// files), which a reboot clears, are never flushed. All undo steps are
// idempotent, so running one twice is harmless. A record recovery cannot use
// (unreadable, unknown version, failed checks) is quarantined (quarantine.go):
// renamed aside and reported, and nothing that depends on it is touched.
//
// The package takes CRI messages as input (like containerd's CRI service) and
// returns copies of its records; the gRPC edge converts them to CRI statuses.
// Lifecycle operations on one object are serialized by that object's op lock;
// reads never wait for a slow stop.
//
// runc, the pod monitors and the host (namespace pins, overlay mounts) are
// reached only through the small interfaces of seams.go, so that the unit
// tests run rollback and recovery against fakes, without root.
package pod
