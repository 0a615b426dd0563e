// Package workloadstore keeps the node agent's workload objects
// (Deployments, ReplicaSets, StatefulSets with their ControllerRevisions, DaemonSets,
// Jobs and CronJobs, as applied and as their controllers changed them, and Services with
// their allocated ClusterIP and nodePorts) on disk, so that they survive an agent restart or kill -9: one
// root-only JSON file per object, <dir>/<kind>-<uid>.json (directory 0700,
// files 0600, written atomically). The agent saves an object before it
// acts on it (a ReplicaSet is saved before its pods are made, a deletion
// is saved before the pods stop, a CronJob's Job before the CronJob's
// lastScheduleTime), so a restart resumes where it stopped. Load returns
// owners before what they own (kinds in name order: CronJob, Deployment,
// Job, ReplicaSet).
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
