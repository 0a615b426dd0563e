package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// ephemeralFile is the record of a pod's ephemeral containers in its agent
// directory (<root>/pods/<uid>/): the sandbox's pod annotation cannot
// change once the sandbox is made, so a restarted agent reads them back
// from here. It goes with the directory when the pod is removed.
const ephemeralFile = "ephemeral-containers.json"

// ephemeralRecordVersion is the version of the record's format.
const ephemeralRecordVersion = 1

// ephemeralRecord is the file's content.
type ephemeralRecord struct {
	Version             int                     `json:"version"`
	UID                 string                  `json:"uid"`
	EphemeralContainers []v1.EphemeralContainer `json:"ephemeralContainers"`
	// Generation is the pod's metadata.generation after the update (0 in
	// records of older agents).
	Generation int64 `json:"generation,omitempty"`
}

// UpdateEphemeralContainers replaces the ephemeral containers of a running
// pod with list, as an update of the API server's ephemeralcontainers
// subresource: defaults are set and the list validated (the current ones
// kept unchanged; see manifest.ValidateEphemeralContainersUpdate), then
// saved in the pod's agent directory before the pod's next sync starts the
// new ones. A pod being deleted refuses it.
func (a *Agent) UpdateEphemeralContainers(_ context.Context, namespace, name string, list []v1.EphemeralContainer) (v1.Pod, error) {
	if err := a.checkReady(); err != nil {
		return v1.Pod{}, err
	}
	a.mu.Lock()
	w := a.workers[a.current[namespace+"/"+name]]
	a.mu.Unlock()
	if w == nil {
		return v1.Pod{}, fmt.Errorf("pod %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
	}
	list = append([]v1.EphemeralContainer(nil), list...)
	manifest.SetEphemeralDefaults(list)
	if err := w.setEphemeral(list); err != nil {
		return v1.Pod{}, err
	}
	w.trigger()
	return w.view(), nil
}

// setEphemeral validates, saves and takes the pod's new list of ephemeral
// containers.
func (w *podWorker) setEphemeral(list []v1.EphemeralContainer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod := w.desired.pod
	if w.desired.terminating() {
		return fmt.Errorf("pod %s: ephemeral containers: the pod is being deleted: %w", w.key, errdefs.ErrFailedPrecondition)
	}
	if err := manifest.ValidateEphemeralContainersUpdate(pod, list); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, err)
	}
	// A changed spec is a new generation, as the API server counts them.
	generation := pod.Generation
	if !reflect.DeepEqual(pod.Spec.EphemeralContainers, list) {
		generation++
	}
	if err := saveEphemeral(w.deps.podDir(w.uid), w.uid, list, generation); err != nil {
		return fmt.Errorf("pod %s: ephemeral containers: %w", w.key, err)
	}
	pod.Spec.EphemeralContainers, pod.Generation = list, generation
	return nil
}

// saveEphemeral writes the record of a pod's ephemeral containers, with
// the pod's generation.
func saveEphemeral(podDir, uid string, list []v1.EphemeralContainer, generation int64) error {
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		return err
	}
	return store.SaveJSON(filepath.Join(podDir, ephemeralFile),
		ephemeralRecord{Version: ephemeralRecordVersion, UID: uid, EphemeralContainers: list, Generation: generation})
}

// loadEphemeral reads the record of a pod's ephemeral containers; none
// is an empty record. A record that cannot be read is moved aside (to
// <file>.unreadable), never removed, and reported in the error.
func loadEphemeral(podDir, uid string) (ephemeralRecord, error) {
	if !uidPattern.MatchString(uid) {
		return ephemeralRecord{}, fmt.Errorf("pod uid %q: not usable as a directory name", uid)
	}
	path := filepath.Join(podDir, ephemeralFile)
	var r ephemeralRecord
	err := store.LoadJSON(path, &r)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		return ephemeralRecord{}, nil
	case err == nil && (r.Version != ephemeralRecordVersion || r.UID != uid):
		err = fmt.Errorf("record %s: version %d for uid %q, want version %d for %q", path, r.Version, r.UID, ephemeralRecordVersion, uid)
	case err == nil:
		return r, nil
	}
	if mvErr := os.Rename(path, path+".unreadable"); mvErr != nil {
		return ephemeralRecord{}, fmt.Errorf("%w (and could not move it aside: %w)", err, mvErr)
	}
	return ephemeralRecord{}, fmt.Errorf("%w: moved aside to %s.unreadable", err, path)
}

// mergeEphemeral adds the ephemeral containers of the record that the
// pod read back from its sandbox lacks (a sandbox made before they were
// added), keeping the sandbox's order first, and the record's generation
// when it is newer. A pod from an agent that kept no generation starts at 1.
func mergeEphemeral(pod *v1.Pod, saved ephemeralRecord) {
	have := map[string]bool{}
	for _, ec := range pod.Spec.EphemeralContainers {
		have[ec.Name] = true
	}
	for _, ec := range saved.EphemeralContainers {
		if !have[ec.Name] {
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
		}
	}
	pod.Generation = max(pod.Generation, saved.Generation, 1)
}
