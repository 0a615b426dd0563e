package criclient

import (
	"maps"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestHandlerFeatures(t *testing.T) {
	got := handlerFeatures([]*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		{Name: "old"},
	})
	if want := map[string]bool{"": true, "runc": true}; !maps.Equal(got.RecursiveReadOnly, want) {
		t.Errorf("recursive read-only %v; want %v", got.RecursiveReadOnly, want)
	}
	if want := map[string]bool{"": true, "runc": false, "old": false}; !maps.Equal(got.UserNamespaces, want) {
		t.Errorf("user namespaces %v; want %v (every handler listed)", got.UserNamespaces, want)
	}
	if none := handlerFeatures(nil); len(none.UserNamespaces)+len(none.RecursiveReadOnly) != 0 {
		t.Errorf("a runtime without handlers: %+v", none)
	}
}
