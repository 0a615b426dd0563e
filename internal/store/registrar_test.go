package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestRegistrarReserve(t *testing.T) {
	r := NewRegistrar()
	if err := r.Reserve("web", "k1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Reserve("web", "k1"); err != nil {
		t.Errorf("re-reserve by the same key: %v", err)
	}
	err := r.Reserve("web", "k2")
	if !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("err = %v, want AlreadyExists", err)
	}
	if want := `name "web" is reserved for "k1": already exists`; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
	if key, ok := r.Get("web"); !ok || key != "k1" {
		t.Errorf("Get = %q, %v; want k1, true", key, ok)
	}
	if err := r.Reserve("", "k"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("empty name: err = %v, want InvalidArgument", err)
	}
}

func TestRegistrarRelease(t *testing.T) {
	r := NewRegistrar()
	for _, n := range []string{"a", "b"} {
		if err := r.Reserve(n, "k1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Reserve("c", "k2"); err != nil {
		t.Fatal(err)
	}
	r.ReleaseByKey("k1")
	for _, n := range []string{"a", "b"} {
		if _, ok := r.Get(n); ok {
			t.Errorf("name %q still reserved after ReleaseByKey", n)
		}
	}
	if _, ok := r.Get("c"); !ok {
		t.Error("ReleaseByKey released another key's name")
	}
	r.Release("c")
	if err := r.Reserve("c", "k3"); err != nil {
		t.Errorf("reserve after Release: %v", err)
	}
	r.Release("never-reserved")
}

func TestRegistrarConcurrentReserveOneWinner(t *testing.T) {
	r := NewRegistrar()
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = r.Reserve("contested", fmt.Sprintf("key-%d", i))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("keys %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, errdefs.ErrAlreadyExists):
			t.Errorf("loser %d: err = %v, want AlreadyExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine won the name")
	}
	if key, _ := r.Get("contested"); key != fmt.Sprintf("key-%d", winner) {
		t.Errorf("name held by %q, winner was key-%d", key, winner)
	}
}
