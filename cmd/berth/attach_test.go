package main

import "testing"

func TestAttachTTY(t *testing.T) {
	for _, tc := range []struct {
		o                         attachOptions
		containerTTY, stdinIsTerm bool
		want, warns               bool
	}{
		{o: attachOptions{}, containerTTY: true, stdinIsTerm: true},
		{o: attachOptions{stdin: true, tty: true}, containerTTY: true, stdinIsTerm: true, want: true},
		{o: attachOptions{stdin: true, tty: true}, containerTTY: false, stdinIsTerm: true, warns: true},
		{o: attachOptions{stdin: true, tty: true}, containerTTY: true, stdinIsTerm: false, warns: true},
		{o: attachOptions{tty: true}, containerTTY: true, stdinIsTerm: true, warns: true},
	} {
		got, warning := attachTTY(tc.o, tc.containerTTY, tc.stdinIsTerm)
		if got != tc.want || (warning != "") != tc.warns {
			t.Errorf("attachTTY(%+v, tty %v, terminal %v) = %v, %q; want %v, warning %v", tc.o, tc.containerTTY, tc.stdinIsTerm, got, warning, tc.want, tc.warns)
		}
	}
}
