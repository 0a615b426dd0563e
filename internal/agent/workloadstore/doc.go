// Package workloadstore keeps the node agent's workload objects
// (Deployments, ReplicaSets, StatefulSets with their ControllerRevisions, and DaemonSets,
// as applied and as their controllers changed them, and Services with their allocated
// ClusterIP and nodePorts) on disk, so that they survive an agent restart or kill -9: one
// root-only JSON file per object, <dir>/<kind>-<uid>.json (directory 0700,
// files 0600, written atomically). The agent saves an object before it
// acts on it (a ReplicaSet is saved before its pods are made, a deletion
// is saved before the pods stop), so a restart resumes where it stopped.
//
//	func Open(dir string) (*Store, error)
//	func (s *Store) Save(r Record) error
//	func (s *Store) Remove(kind, uid string) error
//	func (s *Store) Load() ([]Record, []error)
//
// A file Load cannot read or understand is not removed: it is renamed to
// <name>.unreadable, left for a human, and reported; the objects it held
// are then unknown to the agent, whose pods are left as they are.
package workloadstore
