package claims

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// recordVersion is the version of the record format.
const recordVersion = 1

// Phases of a claim's record: the intent written before each step.
const (
	Pending  = "Pending"  // the record is written, the directory may not be
	Bound    = "Bound"    // the directory exists
	Released = "Released" // the claim is deleted; its data is going
)

// Claim is what the store records of a PersistentVolumeClaim.
type Claim struct {
	Version       int                              `json:"version"`
	Namespace     string                           `json:"namespace"`
	Name          string                           `json:"name"`
	UID           string                           `json:"uid"`
	Volume        string                           `json:"volume"` // pvc-<uid>
	Capacity      resource.Quantity                `json:"capacity"`
	AccessModes   []v1.PersistentVolumeAccessMode  `json:"accessModes"`
	StorageClass  string                           `json:"storageClass,omitempty"`
	ReclaimPolicy v1.PersistentVolumeReclaimPolicy `json:"reclaimPolicy"`
	Created       time.Time                        `json:"created"`
	Phase         string                           `json:"phase"`
	Labels        map[string]string                `json:"labels,omitempty"`
	Annotations   map[string]string                `json:"annotations,omitempty"`
	// Owner is the uid of the StatefulSet that made the claim, if any.
	Owner string `json:"owner,omitempty"`
	// Deleting is when the claim was deleted while pods used it: it is
	// Terminating (kubernetes.io/pvc-protection) until none does.
	Deleting *time.Time `json:"deleting,omitempty"`
}

// Store is the directory of the claims.
type Store struct {
	dir string
	now func() time.Time
	mu  sync.Mutex
}

// Open opens the store in dir, making its directories (0700), and
// finishes the steps a crash interrupted. Records it cannot read are set
// aside and returned as an error naming them; the store is usable anyway.
func Open(dir string, now func() time.Time) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "volumes"), filepath.Join(dir, "retained")} {
		if err := store.MkdirPrivate(d); err != nil {
			return nil, fmt.Errorf("claims store %s: %w", d, err)
		}
	}
	s := &Store{dir: dir, now: now}
	claims, err := s.List()
	for _, c := range claims {
		switch c.Phase {
		case Pending:
			_, rerr := s.bind(c)
			err = errors.Join(err, rerr)
		case Released:
			err = errors.Join(err, s.reclaim(c))
		}
	}
	return s, err
}

// Path is the directory holding the claim's data.
func (s *Store) Path(c Claim) string { return filepath.Join(s.dir, "volumes", c.Volume) }

func (s *Store) recordPath(namespace, name string) (string, error) {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return "", fmt.Errorf("claim %s/%s: namespace: %s: %w", namespace, name, strings.Join(errs, "; "), errdefs.ErrInvalidArgument)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("claim %s/%s: name: %s: %w", namespace, name, strings.Join(errs, "; "), errdefs.ErrInvalidArgument)
	}
	return filepath.Join(s.dir, namespace+"_"+name+".json"), nil
}

// Get returns the claim's record; ok is false when there is none.
func (s *Store) Get(namespace, name string) (c Claim, ok bool, err error) {
	path, err := s.recordPath(namespace, name)
	if err != nil {
		return c, false, err
	}
	err = store.LoadVersionedJSON(path, &c, recordVersion)
	if errors.Is(err, errdefs.ErrNotFound) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("claim %s/%s: %w", namespace, name, err)
	}
	return c, true, nil
}

// List returns every claim's record, sorted by namespace and name. A
// record that cannot be read is renamed <record>.unreadable, kept for a
// person to look at, and reported in the error.
func (s *Store) List() ([]Claim, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Claim
	var errs []error
	for _, path := range names { // Glob sorts
		var c Claim
		if err := store.LoadVersionedJSON(path, &c, recordVersion); err != nil {
			aside, rerr := setAside(path)
			errs = append(errs, fmt.Errorf("claim record set aside as %s: %w", aside, err), rerr)
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// setAside renames an unreadable record <record>.unreadable, or
// <record>.unreadable.N when that is taken: never over one set aside
// before.
func setAside(path string) (string, error) {
	for n := 0; ; n++ {
		aside := path + ".unreadable"
		if n > 0 {
			aside += "." + strconv.Itoa(n)
		}
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, aside, unix.RENAME_NOREPLACE)
		if !errors.Is(err, unix.EEXIST) || n >= 100 {
			if err != nil {
				return aside, fmt.Errorf("set aside %s: %w", path, err)
			}
			return aside, nil
		}
	}
}
