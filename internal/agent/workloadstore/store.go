package workloadstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/store"
)

// recordVersion is the version of the record format.
const recordVersion = 1

// Kinds of records.
const (
	KindDeployment  = "Deployment"
	KindReplicaSet  = "ReplicaSet"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindService     = "Service"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
)

// Record is one workload object and the manifest file it came from ("" for
// an object a controller made).
type Record struct {
	Version     int                 `json:"version"`
	Kind        string              `json:"kind"`
	Source      string              `json:"source,omitempty"`
	Deployment  *appsv1.Deployment  `json:"deployment,omitempty"`
	ReplicaSet  *appsv1.ReplicaSet  `json:"replicaSet,omitempty"`
	StatefulSet *appsv1.StatefulSet `json:"statefulSet,omitempty"`
	// Revisions are a StatefulSet's ControllerRevisions, oldest first.
	Revisions []appsv1.ControllerRevision `json:"revisions,omitempty"`
	DaemonSet *appsv1.DaemonSet           `json:"daemonSet,omitempty"`
	Service   *v1.Service                 `json:"service,omitempty"`
	Job       *batchv1.Job                `json:"job,omitempty"`
	CronJob   *batchv1.CronJob            `json:"cronJob,omitempty"`
	// Counted lists the UIDs of a Job's present pods its status counts
	// (what the API server's job-tracking finalizers keep track of).
	Counted []string `json:"counted,omitempty"`
}

// UID is the uid of the record's object.
func (r Record) UID() string {
	switch {
	case r.Deployment != nil:
		return string(r.Deployment.UID)
	case r.ReplicaSet != nil:
		return string(r.ReplicaSet.UID)
	case r.DaemonSet != nil:
		return string(r.DaemonSet.UID)
	case r.StatefulSet != nil:
		return string(r.StatefulSet.UID)
	case r.Service != nil:
		return string(r.Service.UID)
	case r.Job != nil:
		return string(r.Job.UID)
	case r.CronJob != nil:
		return string(r.CronJob.UID)
	}
	return ""
}

// holdsOnly reports whether the record holds one object, of its kind.
func (r Record) holdsOnly() bool {
	held := map[string]bool{
		KindDeployment: r.Deployment != nil, KindReplicaSet: r.ReplicaSet != nil,
		KindStatefulSet: r.StatefulSet != nil, KindDaemonSet: r.DaemonSet != nil, KindService: r.Service != nil,
		KindJob: r.Job != nil, KindCronJob: r.CronJob != nil,
	}
	n := 0
	for _, h := range held {
		if h {
			n++
		}
	}
	return n == 1 && held[r.Kind]
}

// check says what is wrong with a record, or nil.
func (r Record) check() error {
	switch {
	case r.Version != recordVersion:
		return fmt.Errorf("record version %d, this agent reads %d", r.Version, recordVersion)
	case !r.holdsOnly():
		return fmt.Errorf("record of kind %q does not hold exactly that object", r.Kind)
	}
	if !uidPattern.MatchString(r.UID()) {
		return fmt.Errorf("%s uid %q: not usable as a file name", r.Kind, r.UID())
	}
	return nil
}

// Store is the directory of the workload records.
type Store struct {
	dir string
}

// uidPattern is what an object's uid must look like to name a file.
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Open opens the store in dir, making it (0700) as needed.
func Open(dir string) (*Store, error) {
	if err := store.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("workload store %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

func (s *Store) path(kind, uid string) string {
	return filepath.Join(s.dir, kind+"-"+uid+".json")
}

// Save writes r, replacing the object's earlier record.
func (s *Store) Save(r Record) error {
	r.Version = recordVersion
	if err := r.check(); err != nil {
		return fmt.Errorf("workload store: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("workload store: %s %s: %w", r.Kind, r.UID(), err)
	}
	if err := store.WriteFileAtomic(s.path(r.Kind, r.UID()), data, 0o600); err != nil {
		return fmt.Errorf("workload store: %w", err)
	}
	return nil
}

// Remove deletes an object's record; one already gone is no error.
func (s *Store) Remove(kind, uid string) error {
	if !uidPattern.MatchString(uid) {
		return fmt.Errorf("workload store: %s uid %q: not usable as a file name", kind, uid)
	}
	if err := os.Remove(s.path(kind, uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workload store: %w", err)
	}
	return nil
}

// Load reads every record, sorted by kind (CronJob, Deployment, Job,
// ReplicaSet: owners first). A file it cannot read or
// understand is renamed to <name>.unreadable and reported in the errors,
// each naming the file.
func (s *Store) Load() ([]Record, []error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("workload store %s: %w", s.dir, err)}
	}
	var records []Record
	var problems []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(s.dir, name)
		r, err := readRecord(path)
		if err == nil && path != s.path(r.Kind, r.UID()) {
			err = fmt.Errorf("holds %s %s, which belongs in %s", r.Kind, r.UID(), filepath.Base(s.path(r.Kind, r.UID())))
		}
		if err != nil {
			problems = append(problems, s.setAside(path, err))
			continue
		}
		records = append(records, r)
	}
	sort.SliceStable(records, func(i, j int) bool { return records[i].Kind < records[j].Kind })
	return records, problems
}

func readRecord(path string) (Record, error) {
	var r Record
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	return r, r.check()
}

// setAside renames an unreadable record out of the way, keeping it.
func (s *Store) setAside(path string, why error) error {
	aside := path + ".unreadable"
	if err := os.Rename(path, aside); err != nil {
		return fmt.Errorf("workload store: %s: %w (and it could not be set aside: %w)", path, why, err)
	}
	return fmt.Errorf("workload store: %s: %w: set aside as %s", path, why, aside)
}
