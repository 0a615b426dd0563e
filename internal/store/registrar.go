package store

import (
	"fmt"
	"sync"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Registrar reserves unique names for keys (for example a sandbox name for
// the sandbox id that is being created). It is safe for concurrent use.
type Registrar struct {
	mu     sync.Mutex
	byName map[string]string
}

// NewRegistrar returns an empty Registrar.
func NewRegistrar() *Registrar {
	return &Registrar{byName: make(map[string]string)}
}

// Reserve binds name to key. Reserving a name again for the same key is a
// no-op; a name held by another key is an error wrapping
// errdefs.ErrAlreadyExists. An empty name or key is errdefs.ErrInvalidArgument.
func (r *Registrar) Reserve(name, key string) error {
	if name == "" || key == "" {
		return fmt.Errorf("name %q for key %q: empty name or key: %w", name, key, errdefs.ErrInvalidArgument)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if held, ok := r.byName[name]; ok {
		if held == key {
			return nil
		}
		return fmt.Errorf("name %q is reserved for %q: %w", name, held, errdefs.ErrAlreadyExists)
	}
	r.byName[name] = key
	return nil
}

// Release frees name. Releasing a name that is not reserved is a no-op.
func (r *Registrar) Release(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byName, name)
}

// ReleaseByKey frees every name reserved for key.
func (r *Registrar) ReleaseByKey(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, held := range r.byName {
		if held == key {
			delete(r.byName, name)
		}
	}
}

// Get returns the key that holds name.
func (r *Registrar) Get(name string) (key string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, ok = r.byName[name]
	return key, ok
}
