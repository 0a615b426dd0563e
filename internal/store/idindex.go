package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/berth-dev/berth/internal/errdefs"
)

// IDIndex holds the known ids so that callers may name an object by a unique
// prefix of its id. It is safe for concurrent use.
type IDIndex struct {
	mu  sync.RWMutex
	ids map[string]struct{}
}

// NewIDIndex returns an empty IDIndex.
func NewIDIndex() *IDIndex {
	return &IDIndex{ids: make(map[string]struct{})}
}

// Add records id. An empty id is errdefs.ErrInvalidArgument; an id already
// present is errdefs.ErrAlreadyExists.
func (i *IDIndex) Add(id string) error {
	if id == "" {
		return fmt.Errorf("id index: empty id: %w", errdefs.ErrInvalidArgument)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.ids[id]; ok {
		return fmt.Errorf("id index: id %q: %w", id, errdefs.ErrAlreadyExists)
	}
	i.ids[id] = struct{}{}
	return nil
}

// Delete forgets id. Deleting an unknown id is a no-op.
func (i *IDIndex) Delete(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.ids, id)
}

// Get returns the full id for prefix. An exact id always wins, even when it
// is also the prefix of a longer id. Otherwise prefix must match exactly one
// id: no match wraps errdefs.ErrNotFound, several matches (and an empty
// prefix) wrap errdefs.ErrInvalidArgument, since the caller named nothing
// precise.
func (i *IDIndex) Get(prefix string) (string, error) {
	if prefix == "" {
		return "", fmt.Errorf("id prefix: empty: %w", errdefs.ErrInvalidArgument)
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	if _, ok := i.ids[prefix]; ok {
		return prefix, nil
	}
	found := ""
	for id := range i.ids {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		if found != "" {
			return "", fmt.Errorf("id prefix %q is ambiguous: %w", prefix, errdefs.ErrInvalidArgument)
		}
		found = id
	}
	if found == "" {
		return "", fmt.Errorf("id prefix %q: %w", prefix, errdefs.ErrNotFound)
	}
	return found, nil
}

// GenerateID returns a new random id: 64 lowercase hex characters from
// crypto/rand.
func GenerateID() string {
	var b [32]byte
	// crypto/rand.Read never returns an error on Linux (it aborts the
	// process if the kernel cannot supply randomness).
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
