package monitor

import (
	"errors"
	"slices"
	"testing"
)

func TestForwardResizes(t *testing.T) {
	sizes := []TerminalSize{{80, 24}, {120, 40}, {100, 30}}
	errStop := errors.New("session over")
	cases := []struct {
		name    string
		failAt  int // the apply call that fails; -1 never
		closeCh bool
		want    []TerminalSize
	}{
		{"all sizes in order until sizes closes", -1, true, sizes},
		{"an apply error stops the loop", 1, false, sizes[:2]},
		{"the first apply error stops at once", 0, false, sizes[:1]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan TerminalSize, len(sizes))
			for _, s := range sizes {
				ch <- s
			}
			if tc.closeCh {
				close(ch)
			}
			var got []TerminalSize
			// ForwardResizes returns on its own (closed sizes or an error);
			// done stays open so only those can end it.
			ForwardResizes(ch, make(chan struct{}), func(s TerminalSize) error {
				got = append(got, s)
				if len(got)-1 == tc.failAt {
					return errStop
				}
				return nil
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("applied %v, want %v", got, tc.want)
			}
		})
	}
}

func TestForwardResizesNilAndDone(t *testing.T) {
	apply := func(TerminalSize) error { t.Error("apply called"); return nil }
	ForwardResizes(nil, nil, apply) // a nil channel returns at once

	done := make(chan struct{})
	close(done)
	ForwardResizes(make(chan TerminalSize), done, apply) // returns: done is closed
}
