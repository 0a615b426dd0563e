package pullrecords

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/dockerauth"
)

// Config configures a Manager.
type Config struct {
	// Dir holds the records (made 0700).
	Dir          string
	Verification Verification
	// Now is the time records are stamped with; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Manager keeps the records and decides on them (kubelet's PullManager).
// It is safe for concurrent use. A nil *Manager keeps nothing and never
// asks for a pull.
type Manager struct {
	files  files
	verify Verification
	now    func() time.Time
	log    *slog.Logger

	mu sync.Mutex // guards the files and inFlight
	// inFlight counts the pulls under way by image (imageKey): the intent
	// file goes once the last one ended.
	inFlight map[string]int
}

// Open opens (making as needed) the records in cfg.Dir.
func Open(cfg Config) (*Manager, error) {
	f, err := openFiles(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{files: f, verify: cfg.Verification, now: cfg.Now, log: cfg.Logger, inFlight: map[string]int{}}, nil
}

// Policy is the manager's verification policy (a nil manager's:
// NeverVerify).
func (m *Manager) Policy() Policy {
	if m == nil {
		return NeverVerify
	}
	return m.verify.Policy()
}

// imageKey is the image as intents know it: the normalized reference
// (busybox is index.docker.io/library/busybox:latest), or the image as
// written when it does not parse.
func imageKey(image string) string {
	if ref, err := name.ParseReference(image, name.WeakValidation); err == nil {
		return ref.Name()
	}
	return image
}

// repoOf is the image's repository as records key credentials.
func repoOf(image string) string {
	if repo, ok := dockerauth.RepoToPull(image); ok {
		return repo
	}
	repo, _ := trimTagDigest(image)
	return repo
}

// RecordPullIntent records, before a pull of image (as the pod names it),
// that the agent pulls it: a crash before RecordPulled leaves the intent,
// so the image still counts as pulled by the agent. Each call must be
// followed by one RecordPulled or RecordPullFailed.
func (m *Manager) RecordPullIntent(image string) error {
	if m == nil {
		return nil
	}
	key := imageKey(image)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.files.writeIntent(key); err != nil {
		return fmt.Errorf("image %s: record the pull intent: %w", image, err)
	}
	m.inFlight[key]++
	return nil
}

// RecordPulled records that image was pulled as imageRef (the id the
// runtime reports) with creds, then ends the intent. When the record
// cannot be written the intent stays (the image still counts as pulled by
// the agent, with credentials unknown) and the error says why.
func (m *Manager) RecordPulled(image, imageRef string, creds Credentials) error {
	if m == nil {
		return nil
	}
	if imageRef == "" {
		m.RecordPullFailed(image)
		return fmt.Errorf("image %s: pulled, but the runtime named no image id to record", image)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mergeLocked(imageRef, repoOf(image), &creds, true); err != nil {
		return fmt.Errorf("image %s (%s): record its pull: %w", image, imageRef, err)
	}
	m.endIntentLocked(image)
	return nil
}

// RecordPullFailed ends the intent of a pull that failed.
func (m *Manager) RecordPullFailed(image string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endIntentLocked(image)
}

func (m *Manager) endIntentLocked(image string) {
	key := imageKey(image)
	if m.inFlight[key] > 1 {
		m.inFlight[key]--
		return
	}
	if err := m.files.deleteIntent(key); err != nil {
		m.log.Warn("image pull records: the pull intent stays", "image", image, "error", err)
		return
	}
	delete(m.inFlight, key)
}

// mergeLocked merges creds into the record of imageRef under repo,
// making it as needed (an unreadable one is replaced); touch rewrites it
// even unchanged, stamped now: a pull just brought the image.
func (m *Manager) mergeLocked(imageRef, repo string, creds *Credentials, touch bool) error {
	rec, err := m.files.readPulled(imageRef)
	if err != nil {
		m.log.Warn("image pull records: replacing an unreadable record", "imageRef", imageRef, "error", err)
	}
	changed := rec == nil
	if rec == nil {
		rec = &Pulled{ImageRef: imageRef}
	} else {
		rec = rec.clone()
	}
	changed = rec.merge(repo, creds) || changed
	if !changed && !touch {
		return nil
	}
	rec.LastUpdated = m.now()
	return m.files.writePulled(rec)
}

// MustPull decides whether a pod may use the present image imageRef
// (found for image, as the pod names it) or must pull it with its own
// credentials (kubelet's MustAttemptImagePull). podSecrets are the pod's
// image pull secrets that match the image, each with its credential's
// hash; it is called only when the record has secrets to match. The
// error is podSecrets'.
func (m *Manager) MustPull(image, imageRef string, podSecrets func() ([]Secret, error)) (Decision, error) {
	if m == nil {
		return Decision{}, nil
	}
	if imageRef == "" {
		return Decision{Pull: true, Why: whyNoRecord}, nil
	}
	repo := repoOf(image)
	rec, pulledByAgent, err := m.read(image, imageRef)
	if err != nil {
		m.log.Warn("image pull records unreadable: verifying the pod's credentials", "image", image, "imageRef", imageRef, "error", err)
		if !m.verify.Required(image, true) {
			return Decision{}, nil
		}
		return Decision{Pull: true, Why: whyUnreadable}, nil
	}
	d, err := decide(m.verify, image, repo, pulledByAgent, rec, podSecrets)
	if d.learn != nil {
		m.mu.Lock()
		werr := m.mergeLocked(imageRef, repo, &Credentials{Secrets: []Secret{*d.learn}}, false)
		m.mu.Unlock()
		if werr != nil {
			m.log.Warn("image pull records: could not add the pod's matching secret", "image", image, "secret", d.learn.String(), "error", werr)
		}
	}
	return d, err
}

// read returns the record of imageRef and whether the agent pulled the
// image: a record, a pull under way or an intent left by a crash.
func (m *Manager) read(image, imageRef string) (*Pulled, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, err := m.files.readPulled(imageRef)
	if err != nil || rec != nil {
		return rec, true, err
	}
	key := imageKey(image)
	if m.inFlight[key] > 0 {
		return nil, true, nil
	}
	exists, err := m.files.intentExists(key)
	return nil, exists, err
}

// Recover runs once at start, before any pull (kubelet's initialize): the
// intents of images the runtime now holds (images, listed at listedAt)
// become records with credentials unknown — the pull may have ended
// after a crash, and whoever asks for the image must then show
// credentials — and records of images that are gone are dropped (Prune).
// Intents of images the runtime lacks stay.
func (m *Manager) Recover(images []*runtimeapi.Image, listedAt time.Time) error {
	if m == nil {
		return nil
	}
	intents, err := m.files.listIntents()
	pending := map[string]bool{}
	for _, key := range intents {
		pending[key] = true
	}
	var errs []error
	m.mu.Lock()
	for _, img := range images {
		for _, n := range append(img.GetRepoTags(), img.GetRepoDigests()...) {
			key := imageKey(n)
			if !pending[key] || img.GetId() == "" {
				continue
			}
			if err := m.mergeLocked(img.GetId(), repoOf(n), nil, true); err != nil {
				errs = append(errs, fmt.Errorf("image %s (%s): %w", key, img.GetId(), err))
				continue
			}
			delete(pending, key)
			if err := m.files.deleteIntent(key); err != nil {
				errs = append(errs, err)
			}
		}
	}
	m.mu.Unlock()
	ids := make([]string, 0, len(images))
	for _, img := range images {
		ids = append(ids, img.GetId())
	}
	return errors.Join(err, errors.Join(errs...), m.Prune(ids, listedAt))
}

// Prune drops the records of image ids not in present (the runtime's
// images as listed at listedAt), unless updated since then: a pull that
// ended after the listing is not undone (kubelet's PruneUnknownRecords).
func (m *Manager) Prune(present []string, listedAt time.Time) error {
	if m == nil {
		return nil
	}
	keep := make(map[string]bool, len(present))
	for _, id := range present {
		keep[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.files.listPulled()
	errs := []error{err}
	for _, rec := range recs {
		if keep[rec.ImageRef] || !rec.LastUpdated.Before(listedAt) {
			continue
		}
		if err := m.files.deletePulled(rec.ImageRef); err != nil {
			errs = append(errs, err)
			continue
		}
		m.log.Debug("image pull records: dropped the record of an image that is gone", "imageRef", rec.ImageRef)
	}
	return errors.Join(errs...)
}
