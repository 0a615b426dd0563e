package userns

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/store"
)

// ErrNoFreeBlock marks an allocation that found every block of the range
// taken.
var ErrNoFreeBlock = errors.New("no free block of host ids")

// Options configures a Manager.
type Options struct {
	// Dir holds the allocations' records; it is made (0700) if missing.
	Dir string
	// SubUIDFile and SubGIDFile are read for User's range (ReadRange);
	// both empty: DefaultRange, and no file is read.
	SubUIDFile, SubGIDFile string
	// User names the entries of the range; default DefaultUser.
	User string
	// MaxPods is the node's max pods: the range must hold a block for
	// each (kubelet's rule); 0: not checked.
	MaxPods int
	// Handlers are the runtime handlers the runtime's CRI Status lists, by
	// name ("" the default handler), true for those that support user
	// namespaces; none: a runtime that lists no handler features.
	Handlers map[string]bool
	// Rand returns a number in [0, n); default math/rand/v2's IntN.
	Rand func(n int) int
}

// Manager hands out and keeps the pods' blocks of host ids; safe for
// concurrent use. A nil *Manager runs every pod in the host's user
// namespace and refuses hostUsers: false.
type Manager struct {
	dir      string
	rng      Range
	handlers map[string]bool
	rand     func(int) int

	mu    sync.Mutex
	byUID map[string]uint32 // pod uid → index of its block in the range
	used  map[uint32]string // block index → pod uid
}

// Open reads the range and every record in opts.Dir back: a block on
// record stays its pod's. A record that cannot be read, does not fit the
// range or overlaps another is an error naming it, and nothing is opened.
func Open(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, errors.New("user namespaces: no directory for the allocations' records")
	}
	if opts.User == "" {
		opts.User = DefaultUser
	}
	if opts.Rand == nil {
		opts.Rand = rand.IntN
	}
	rng := DefaultRange()
	if opts.SubUIDFile != "" || opts.SubGIDFile != "" {
		var err error
		if rng, err = ReadRange(opts.SubUIDFile, opts.SubGIDFile, opts.User, opts.MaxPods); err != nil {
			return nil, err
		}
	} else if err := rng.validate(opts.MaxPods); err != nil {
		return nil, fmt.Errorf("user namespaces: range %s: %w", rng, err)
	}
	if err := store.MkdirPrivate(opts.Dir); err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	m := &Manager{
		dir: opts.Dir, rng: rng, handlers: opts.Handlers, rand: opts.Rand,
		byUID: map[string]uint32{}, used: map[uint32]string{},
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	return m, nil
}

// load records the allocations on disk.
func (m *Manager) load() error {
	paths, err := listRecords(m.dir)
	if err != nil {
		return fmt.Errorf("user namespaces: %w", err)
	}
	var errs []error
	for _, path := range paths {
		uid, hostID, err := loadRecord(path)
		if err == nil {
			err = m.take(uid, hostID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("user namespaces: %s: %w (a block that may be in use is never handed out again: put the range back, or remove the pod and then this record)", path, err))
		}
	}
	return errors.Join(errs...)
}

// take marks hostID's block as uid's.
func (m *Manager) take(uid string, hostID uint32) error {
	if !manifest.ValidUID(uid) {
		return fmt.Errorf("pod uid %q: not usable as a file name", uid)
	}
	if hostID%BlockLength != 0 {
		return fmt.Errorf("pod %s: first host id %d is not a multiple of %d", uid, hostID, BlockLength)
	}
	if hostID < m.rng.First || (hostID-m.rng.First)/BlockLength >= m.rng.blocks() {
		return fmt.Errorf("pod %s: host ids %d-%d are outside the range %s", uid, hostID, uint64(hostID)+BlockLength-1, m.rng)
	}
	index := (hostID - m.rng.First) / BlockLength
	if other, taken := m.used[index]; taken && other != uid {
		return fmt.Errorf("pod %s: host ids from %d are pod %s's already", uid, hostID, other)
	}
	if prev, ok := m.byUID[uid]; ok && prev != index {
		return fmt.Errorf("pod %s: holds host ids from %d already", uid, m.hostID(prev))
	}
	m.byUID[uid], m.used[index] = index, uid
	return nil
}

func (m *Manager) hostID(index uint32) uint32 { return m.rng.First + index*BlockLength }

// Range is the range the blocks come from.
func (m *Manager) Range() Range { return m.rng }

// Allocation is the first host id of uid's block, if it has one.
func (m *Manager) Allocation(uid string) (uint32, bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	index, ok := m.byUID[uid]
	if !ok {
		return 0, false
	}
	return m.hostID(index), true
}

// Allocate returns the first host id of uid's block, picking a free one
// at random and writing its record first if uid has none yet.
func (m *Manager) Allocate(uid string) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index, ok := m.byUID[uid]; ok {
		return m.hostID(index), nil
	}
	if !manifest.ValidUID(uid) {
		return 0, fmt.Errorf("pod uid %q: not usable as a file name", uid)
	}
	n := m.rng.blocks()
	if uint64(len(m.used)) >= uint64(n) {
		return 0, fmt.Errorf("%w left in the range %s: all %d blocks of %d are allocated", ErrNoFreeBlock, m.rng, n, BlockLength)
	}
	start := uint32(m.rand(int(n)))
	for i := range n {
		index := (start + i) % n
		if _, taken := m.used[index]; taken {
			continue
		}
		if err := saveRecord(m.dir, uid, m.hostID(index)); err != nil {
			return 0, fmt.Errorf("user namespace record: %w", err)
		}
		m.byUID[uid], m.used[index] = index, uid
		return m.hostID(index), nil
	}
	return 0, fmt.Errorf("%w left in the range %s", ErrNoFreeBlock, m.rng) // not reached: len(used) < n
}

// Release frees uid's block once its record is gone; a pod without one is
// no error. A record that cannot be removed keeps the block taken.
func (m *Manager) Release(uid string) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.releaseLocked(uid)
}

func (m *Manager) releaseLocked(uid string) error {
	index, ok := m.byUID[uid]
	if !ok {
		return nil
	}
	if err := removeRecord(m.dir, uid); err != nil {
		return fmt.Errorf("pod %s: user namespace record: %w", uid, err)
	}
	delete(m.byUID, uid)
	delete(m.used, index)
	return nil
}

// CleanupOrphans releases the block of every pod not in keep (by uid) and
// returns their uids.
func (m *Manager) CleanupOrphans(keep map[string]bool) ([]string, error) {
	if m == nil {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var freed []string
	var errs []error
	for _, uid := range slices.Sorted(maps.Keys(m.byUID)) {
		if keep[uid] {
			continue
		}
		if err := m.releaseLocked(uid); err != nil {
			errs = append(errs, err)
			continue
		}
		freed = append(freed, uid)
	}
	return freed, errors.Join(errs...)
}

// PodUserNamespace is the CRI user namespace of pod's sandbox and
// containers, as kubelet's GetOrCreateUserNamespaceMappings: Mode NODE
// unless spec.hostUsers is false; then Mode POD with the pod's block,
// allocated now if it has none, once handler (the pod's runtime handler,
// "" the default) is known to support user namespaces.
func (m *Manager) PodUserNamespace(pod *v1.Pod, handler string) (*runtimeapi.UserNamespace, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	key := pod.Namespace + "/" + pod.Name
	if m == nil {
		return nil, fmt.Errorf("pod %s: spec.hostUsers: false: user namespaces are not set up on this agent", key)
	}
	if err := checkHandler(m.handlers, handler); err != nil {
		return nil, fmt.Errorf("pod %s: spec.hostUsers: false: %w", key, err)
	}
	hostID, err := m.Allocate(string(pod.UID))
	if err != nil {
		return nil, fmt.Errorf("pod %s: spec.hostUsers: false: %w", key, err)
	}
	return CRIUserNamespace(hostID), nil
}

// CRIUserNamespace is the user namespace of a pod whose block starts at
// hostID: Mode POD, container ids 0-65535 mapped from hostID on, for
// uids and gids alike.
func CRIUserNamespace(hostID uint32) *runtimeapi.UserNamespace {
	ids := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: BlockLength}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids(), Gids: ids()}
}

// checkHandler says why handler cannot run a pod in a user namespace, as
// kubelet's HandlerSupportsUserNamespaces decides.
func checkHandler(handlers map[string]bool, handler string) error {
	if len(handlers) == 0 {
		return errors.New("the runtime does not support user namespaces (its CRI Status lists no runtime handler features)")
	}
	supported, known := handlers[handler]
	switch {
	case !known:
		return fmt.Errorf("runtime handler %q is not known to the runtime", handler)
	case !supported && handler == "":
		return errors.New("the runtime's default handler does not support user namespaces")
	case !supported:
		return fmt.Errorf("RuntimeClass handler %q does not support user namespaces", handler)
	}
	return nil
}
