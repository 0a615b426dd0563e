package pod

import "sort"

// Sandbox returns a copy of a sandbox record by id or unique id prefix.
func (s *Service) Sandbox(id string) (Sandbox, error) {
	e, err := s.findSandbox(id)
	if err != nil {
		return Sandbox{}, err
	}
	return e.snapshot(), nil
}

// Sandboxes returns copies of all sandbox records, oldest first.
func (s *Service) Sandboxes() []Sandbox {
	s.mu.RLock()
	out := make([]Sandbox, 0, len(s.sandboxes))
	for _, e := range s.sandboxes {
		out = append(out, e.snapshot())
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// Container returns a copy of a container record by id or unique id prefix,
// with any exit already written by its monitor applied.
func (s *Service) Container(id string) (Container, error) {
	e, err := s.findContainer(id)
	if err != nil {
		return Container{}, err
	}
	s.refreshExit(e)
	return e.snapshot(), nil
}

// Containers returns copies of all container records, oldest first.
func (s *Service) Containers() []Container {
	s.mu.RLock()
	entries := make([]*containerEntry, 0, len(s.containers))
	for _, e := range s.containers {
		entries = append(entries, e)
	}
	s.mu.RUnlock()
	out := make([]Container, 0, len(entries))
	for _, e := range entries {
		s.refreshExit(e)
		out = append(out, e.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// ContainersUsingImage lists the ids of containers that use an image, as
// their rootfs or an image volume (Container.ImageIDs): its layers must
// stay while they exist. Quarantined containers count, and one whose image
// is unknown holds every image.
func (s *Service) ContainersUsingImage(imageID string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
	for id, e := range s.containers {
		if e.snapshot().UsesImage(imageID) {
			ids = append(ids, id)
		}
	}
	if n := s.imagesInUse[imageID]; n > 0 && len(ids) == 0 {
		ids = append(ids, "(being created)")
	}
	return append(ids, s.quarantinedImageUsers(imageID)...)
}

// holdImage marks an image as used by a create in flight, whose rootfs may
// already stand on its layers before the container is registered.
func (s *Service) holdImage(imageID string) (release func()) {
	s.mu.Lock()
	s.imagesInUse[imageID]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.imagesInUse[imageID]--; s.imagesInUse[imageID] <= 0 {
			delete(s.imagesInUse, imageID)
		}
		s.mu.Unlock()
	}
}
