package claims

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// Ensure binds the claim to its directory, making both on first sight,
// and returns its record. A claim seen again may grow its request (the
// capacity follows, as an expansion); shrinking it or changing its access
// modes or class is refused as the API server refuses it. A claim of the
// same name with another uid is refused until the old one is released.
// policy is the reclaim policy of a new claim's volume.
func (s *Store) Ensure(pvc *v1.PersistentVolumeClaim, policy v1.PersistentVolumeReclaimPolicy) (Claim, error) {
	return s.EnsureOwned(pvc, policy, "")
}

// EnsureOwned is Ensure for a claim a controller makes: a new claim
// records owner (a StatefulSet's uid). A claim seen again keeps its owner
// and takes the claim's labels and annotations.
func (s *Store) EnsureOwned(pvc *v1.PersistentVolumeClaim, policy v1.PersistentVolumeReclaimPolicy, owner string) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, name := pvc.Namespace, pvc.Name
	request, ok := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok || request.Sign() <= 0 {
		return Claim{}, fmt.Errorf("claim %s/%s: spec.resources.requests.storage: Required value: a size greater than zero: %w", ns, name, errdefs.ErrInvalidArgument)
	}
	if pvc.UID == "" {
		return Claim{}, fmt.Errorf("claim %s/%s: metadata.uid: Required value: %w", ns, name, errdefs.ErrInvalidArgument)
	}
	if !manifest.ValidUID(string(pvc.UID)) { // it names the claim's directory
		return Claim{}, fmt.Errorf("claim %s/%s: metadata.uid: Invalid value %q: %s: %w", ns, name, pvc.UID, manifest.UIDRule, errdefs.ErrInvalidArgument)
	}
	c, found, err := s.Get(ns, name)
	if err != nil {
		return Claim{}, err
	}
	if found && c.Phase == Released {
		if err := s.reclaim(c); err != nil {
			return Claim{}, err
		}
		found = false
	}
	if !found {
		c = Claim{
			Version: recordVersion, Namespace: ns, Name: name, UID: string(pvc.UID),
			Volume: "pvc-" + string(pvc.UID), Capacity: request, AccessModes: pvc.Spec.AccessModes,
			StorageClass: className(pvc), ReclaimPolicy: policy, Created: s.now().UTC(), Phase: Pending,
			Labels: pvc.Labels, Annotations: pvc.Annotations, Owner: owner,
		}
		if err := s.save(c); err != nil {
			return Claim{}, err
		}
		return s.bind(c)
	}
	if err := checkUpdate(c, pvc, request); err != nil {
		return Claim{}, err
	}
	if request.Cmp(c.Capacity) > 0 || !maps.Equal(c.Labels, pvc.Labels) || !maps.Equal(c.Annotations, pvc.Annotations) {
		c.Capacity = maxQuantity(c.Capacity, request)
		c.Labels, c.Annotations = pvc.Labels, pvc.Annotations
		if err := s.save(c); err != nil {
			return Claim{}, err
		}
	}
	if c.Phase == Pending {
		return s.bind(c)
	}
	return c, nil
}

func maxQuantity(a, b resource.Quantity) resource.Quantity {
	if b.Cmp(a) > 0 {
		return b
	}
	return a
}

// MarkDeleting records that the claim was deleted while in use; it stays
// (Terminating) until Release. A claim already marked keeps its time.
func (s *Store) MarkDeleting(namespace, name string, at time.Time) (Claim, error) {
	return s.update(namespace, name, func(c *Claim) bool {
		if c.Deleting != nil {
			return false
		}
		at = at.UTC()
		c.Deleting = &at
		return true
	})
}

// SetOwner records owner (a StatefulSet's uid, "" for none) as the
// claim's: a set adopts the claims a deleted set of its name left.
func (s *Store) SetOwner(namespace, name, owner string) (Claim, error) {
	return s.update(namespace, name, func(c *Claim) bool {
		if c.Owner == owner {
			return false
		}
		c.Owner = owner
		return true
	})
}

// Annotate sets the claim's annotations of annotations: a value sets
// one, "" removes it. The agent marks with it a claim kept after the set
// that made it.
func (s *Store) Annotate(namespace, name string, annotations map[string]string) (Claim, error) {
	return s.update(namespace, name, func(c *Claim) bool {
		next := maps.Clone(c.Annotations)
		for k, v := range annotations {
			if v == "" {
				delete(next, k)
				continue
			}
			if next == nil {
				next = map[string]string{}
			}
			next[k] = v
		}
		if maps.Equal(next, c.Annotations) {
			return false
		}
		if len(next) == 0 {
			next = nil
		}
		c.Annotations = next
		return true
	})
}

// update changes the stored claim with change, under the store's lock,
// and saves it when change says it changed; a missing claim is NotFound.
func (s *Store) update(namespace, name string, change func(*Claim) bool) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found, err := s.Get(namespace, name)
	if err != nil {
		return c, err
	}
	if !found {
		return c, fmt.Errorf("persistentvolumeclaim %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
	}
	if !change(&c) {
		return c, nil
	}
	return c, s.save(c)
}

func className(pvc *v1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// checkUpdate refuses what the API server refuses of a bound claim.
func checkUpdate(c Claim, pvc *v1.PersistentVolumeClaim, request resource.Quantity) error {
	id := c.Namespace + "/" + c.Name
	switch {
	case c.UID != string(pvc.UID):
		return fmt.Errorf("claim %s (uid %s): the name is bound to volume %s of claim uid %s; delete that claim first: %w", id, pvc.UID, c.Volume, c.UID, errdefs.ErrAlreadyExists)
	case request.Cmp(c.Capacity) < 0:
		return fmt.Errorf("claim %s: spec.resources.requests.storage: Forbidden: field can not be less than previous value (%s < %s): %w", id, request.String(), c.Capacity.String(), errdefs.ErrInvalidArgument)
	case !slices.Equal(c.AccessModes, pvc.Spec.AccessModes) || c.StorageClass != className(pvc):
		return fmt.Errorf("claim %s: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims: %w", id, errdefs.ErrInvalidArgument)
	}
	return nil
}

// bind makes the claim's directory and records it Bound.
func (s *Store) bind(c Claim) (Claim, error) {
	if err := checkVolume(c); err != nil {
		return Claim{}, err
	}
	path := s.Path(c)
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return Claim{}, fmt.Errorf("claim %s/%s: making %s: %w", c.Namespace, c.Name, path, err)
	}
	if err := os.Chmod(path, 0o777); err != nil { // as an emptyDir: any uid of the pod writes here; the parent is 0700
		return Claim{}, fmt.Errorf("claim %s/%s: %s: %w", c.Namespace, c.Name, path, err)
	}
	c.Phase = Bound
	return c, s.save(c)
}

func (s *Store) save(c Claim) error {
	path, err := s.recordPath(c.Namespace, c.Name)
	if err != nil {
		return err
	}
	c.Version = recordVersion
	if err := store.SaveJSON(path, c); err != nil {
		return fmt.Errorf("claim %s/%s: record %s: %w", c.Namespace, c.Name, path, err)
	}
	return nil
}

// Release is the claim's deletion: its data is removed (Delete) or moved
// to <dir>/retained (Retain), then its record goes. The caller makes sure
// no pod uses the claim any more. Releasing a claim the store does not
// have is not an error.
func (s *Store) Release(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found, err := s.Get(namespace, name)
	if err != nil || !found {
		return err
	}
	c.Phase = Released
	if err := s.save(c); err != nil {
		return err
	}
	return s.reclaim(c)
}

// reclaim does a Released claim's policy, then removes its record.
func (s *Store) reclaim(c Claim) error {
	if err := checkVolume(c); err != nil {
		return err
	}
	data := s.Path(c)
	var err error
	if c.ReclaimPolicy == v1.PersistentVolumeReclaimRetain {
		err = os.Rename(data, filepath.Join(s.dir, "retained", c.Volume))
	} else {
		err = os.RemoveAll(data) // RemoveAll removes symlinks, never follows them
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claim %s/%s: reclaiming volume %s (%s): %w", c.Namespace, c.Name, c.Volume, c.ReclaimPolicy, err)
	}
	path, err := s.recordPath(c.Namespace, c.Name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claim %s/%s: removing record: %w", c.Namespace, c.Name, err)
	}
	return store.SyncDir(s.dir)
}

// checkVolume refuses a record whose volume is not "pvc-<uid>" of a valid
// uid: its directory would not be the store's own.
func checkVolume(c Claim) error {
	if !manifest.ValidUID(c.UID) || c.Volume != "pvc-"+c.UID {
		return fmt.Errorf("claim %s/%s: volume %q of uid %q: not a volume of the store's (pvc-<uid>): left alone", c.Namespace, c.Name, c.Volume, c.UID)
	}
	return nil
}
