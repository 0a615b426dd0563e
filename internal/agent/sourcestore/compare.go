package sourcestore

import "github.com/berth-dev/berth/internal/agent/podspec"

// Difference is how the sources the store holds for a pod differ from
// the refs its sandbox carries: each entry names a source ("ConfigMap
// cfg").
type Difference struct {
	// Missing are referenced but not in the store.
	Missing []string
	// Changed are in the store with another digest: changed since the
	// sandbox was made (the store keeps the newest version).
	Changed []string
}

// Compare checks the sources the store holds against a sandbox's refs.
func (s *Store) Compare(refs podspec.SourceRefs, held podspec.Sources) (Difference, error) {
	have, err := s.Refs(held)
	if err != nil {
		return Difference{}, err
	}
	var diff Difference
	check := func(kind string, want, got []podspec.SourceRef) {
		digests := make(map[string]string, len(got))
		for _, r := range got {
			digests[r.Name] = r.Digest
		}
		for _, r := range want {
			d, found := digests[r.Name]
			switch {
			case !found:
				diff.Missing = append(diff.Missing, kind+" "+r.Name)
			case d != r.Digest:
				diff.Changed = append(diff.Changed, kind+" "+r.Name)
			}
		}
	}
	check("ConfigMap", refs.ConfigMaps, have.ConfigMaps)
	check("Secret", refs.Secrets, have.Secrets)
	return diff, nil
}
