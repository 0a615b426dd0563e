package criserver

import "strings"

// matchesID reports whether id is the filter's id or starts with it, as
// crictl's short ids expect.
func matchesID(id, filter string) bool {
	return strings.HasPrefix(id, filter)
}

// matchesLabels reports whether labels hold every key/value of the selector.
func matchesLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
