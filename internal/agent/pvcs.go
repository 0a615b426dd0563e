package agent

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/claims"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// pvcProtectionFinalizer is the finalizer a claim in use carries.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// claimSet is the agent's side of the claims store: which pods mounted
// which claim (until their volumes are torn down), for ReadWriteOncePod and
// for the protection of claims in use. It is the volume manager's
// ClaimResolver; its lock is taken after the agent's, never before.
type claimSet struct {
	store *claims.Store
	mu    sync.Mutex
	users map[string]map[string]bool // "namespace/name" → uids of the pods that mounted it
}

func newClaimSet(store *claims.Store) *claimSet {
	return &claimSet{store: store, users: map[string]map[string]bool{}}
}

// ClaimPath is the directory of the claim the pod's volume names: the
// claim must exist, not be Terminating (unless the pod mounted it
// already), and be ReadWriteOncePod only if no other pod mounted it.
func (s *claimSet) ClaimPath(pod *v1.Pod, claimName string) (string, error) {
	c, found, err := s.store.Get(pod.Namespace, claimName)
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", fmt.Errorf("persistentvolumeclaim %q not found", claimName)
	}
	key, uid := pod.Namespace+"/"+claimName, string(pod.UID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[key][uid] {
		return s.store.Path(c), nil
	}
	if c.Deleting != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", claimName)
	}
	if len(s.users[key]) > 0 && slices.Contains(c.AccessModes, v1.ReadWriteOncePod) {
		return "", errors.New("0/1 nodes are available: 1 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")
	}
	if s.users[key] == nil {
		s.users[key] = map[string]bool{}
	}
	s.users[key][uid] = true
	return s.store.Path(c), nil
}

// adopt records a recovered pod as a user of the claims its volumes name:
// they were mounted before the agent restarted.
func (s *claimSet) adopt(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, vol := range pod.Spec.Volumes {
		if c := vol.PersistentVolumeClaim; c != nil {
			key := pod.Namespace + "/" + c.ClaimName
			if s.users[key] == nil {
				s.users[key] = map[string]bool{}
			}
			s.users[key][string(pod.UID)] = true
		}
	}
}

// forget drops a pod whose volumes are torn down.
func (s *claimSet) forget(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, pods := range s.users {
		delete(pods, uid)
		if len(pods) == 0 {
			delete(s.users, key)
		}
	}
}

// mounted says whether a pod still has the claim mounted.
func (s *claimSet) mounted(namespace, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.users[namespace+"/"+name]) > 0
}

// claimVolumes is the volume manager with the claims' bookkeeping: a pod
// torn down no longer uses its claims.
type claimVolumes struct {
	volumeManager
	claims *claimSet
}

func (v claimVolumes) Teardown(uid string) error {
	if err := v.volumeManager.Teardown(uid); err != nil {
		return err
	}
	v.claims.forget(uid)
	return nil
}

// reclaimPolicy is a claim's reclaim policy from its annotation (Delete
// when absent; manifest validated the value).
func reclaimPolicy(pvc *v1.PersistentVolumeClaim) v1.PersistentVolumeReclaimPolicy {
	if v1.PersistentVolumeReclaimPolicy(pvc.Annotations[manifest.ReclaimPolicyAnnotation]) == v1.PersistentVolumeReclaimRetain {
		return v1.PersistentVolumeReclaimRetain
	}
	return v1.PersistentVolumeReclaimDelete
}

// applyClaimsLocked binds the bundle's claims: a new one gets a uid and
// its directory, one seen again keeps them (a larger request grows it;
// what the API server forbids to change is refused). A claim being
// deleted cannot be applied again until it is gone.
func (a *Agent) applyClaimsLocked(b *manifest.Bundle) ([]agentapi.ApplyResult, error) {
	var results []agentapi.ApplyResult
	for _, in := range b.PersistentVolumeClaims {
		pvc := in.DeepCopy()
		r := agentapi.ApplyResult{Kind: agentapi.KindPersistentVolumeClaim, Namespace: pvc.Namespace, Name: pvc.Name, Outcome: agentapi.OutcomeCreated}
		cur, found, err := a.claims.store.Get(pvc.Namespace, pvc.Name)
		if err != nil {
			return results, fmt.Errorf("%s: PersistentVolumeClaim %s/%s: %w", in.Source, pvc.Namespace, pvc.Name, err)
		}
		pvc.UID = newUID()
		if found {
			if cur.Deleting != nil {
				return results, fmt.Errorf("%s: PersistentVolumeClaim %s/%s: object is being deleted: persistentvolumeclaims %q already exists: %w", in.Source, pvc.Namespace, pvc.Name, pvc.Name, errdefs.ErrAlreadyExists)
			}
			pvc.UID = types.UID(cur.UID)
		}
		c, err := a.claims.store.Ensure(pvc, reclaimPolicy(pvc))
		if err != nil {
			return results, fmt.Errorf("%s: PersistentVolumeClaim %s/%s: %w", in.Source, pvc.Namespace, pvc.Name, err)
		}
		if found {
			r.Outcome = agentapi.OutcomeConfigured
			if claimUnchanged(cur, c) {
				r.Outcome = agentapi.OutcomeUnchanged
			}
		}
		r.UID = c.UID
		results = append(results, r)
	}
	return results, nil
}

func claimUnchanged(before, after claims.Claim) bool {
	return before.Capacity.Cmp(after.Capacity) == 0 && maps.Equal(before.Labels, after.Labels) && maps.Equal(before.Annotations, after.Annotations)
}

// claimUsersLocked names the pods (not finished) whose volumes use the
// claim, sorted.
func (a *Agent) claimUsersLocked(namespace, name string) []string {
	var out []string
	for _, w := range a.workers {
		pod := w.snapshotPod()
		if pod.Namespace != namespace || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == name {
				out = append(out, pod.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// syncClaimsLocked is the pvc-protection controller: a Terminating claim
// no pod uses any more is released by its reclaim policy.
func (a *Agent) syncClaimsLocked() {
	list, err := a.claims.store.List()
	if err != nil {
		a.log.Error("claims: list", "error", err)
	}
	for _, c := range list {
		if c.Deleting == nil || len(a.claimUsersLocked(c.Namespace, c.Name)) > 0 || a.claims.mounted(c.Namespace, c.Name) {
			continue
		}
		if err := a.claims.store.Release(c.Namespace, c.Name); err != nil {
			a.log.Error("claims: release", "claim", c.Namespace+"/"+c.Name, "error", err)
			continue
		}
		a.log.Info("claim released", "claim", c.Namespace+"/"+c.Name, "volume", c.Volume, "reclaimPolicy", string(c.ReclaimPolicy))
	}
}

// deleteClaimLocked deletes a claim: it is marked Terminating, and goes
// (by its reclaim policy) once no pod uses it.
func (a *Agent) deleteClaimLocked(namespace, name string) (claims.Claim, error) {
	c, err := a.claims.store.MarkDeleting(namespace, name, a.deps.clock.Now())
	if err != nil {
		return c, err
	}
	a.syncClaimsLocked()
	return c, nil
}

// claimObject is the claim as the API server shows it.
func claimObject(c claims.Claim) v1.PersistentVolumeClaim {
	class := c.StorageClass
	pvc := v1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: agentapi.KindPersistentVolumeClaim},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, Namespace: c.Namespace, UID: types.UID(c.UID), CreationTimestamp: metav1.NewTime(c.Created),
			Labels: c.Labels, Annotations: c.Annotations, Finalizers: []string{pvcProtectionFinalizer},
		},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: c.AccessModes, VolumeName: c.Volume, StorageClassName: &class,
			VolumeMode: ptrTo(v1.PersistentVolumeFilesystem),
			Resources:  v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: c.Capacity}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	if c.Deleting != nil {
		t := metav1.NewTime(*c.Deleting)
		pvc.DeletionTimestamp = &t
	}
	if c.Phase == claims.Bound {
		pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: c.AccessModes, Capacity: v1.ResourceList{v1.ResourceStorage: c.Capacity}}
	}
	return pvc
}

func ptrTo[T any](v T) *T { return &v }
