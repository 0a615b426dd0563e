package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// The daemon `berth run` starts must get the directories and sockets the
// user gave, never the defaults.
func TestPassedGlobalFlagsRepeatTheUsersGlobalFlags(t *testing.T) {
	root := newRootCommand()
	var got []string
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				got = passedGlobalFlags(cmd)
				return nil
			}
		}
	}
	root.SetArgs([]string{"run", "-f", "pod.yaml", "--root", "/r", "--state", "/s", "--cni-bin-dir", "/a", "--cni-bin-dir", "/b", "--runtime-endpoint", "unix:///x"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--root=/r", "--state=/s", "--cni-bin-dir=/a", "--cni-bin-dir=/b"} {
		if !slices.Contains(got, want) {
			t.Errorf("flags for the daemon %v lack %s", got, want)
		}
	}
	for _, arg := range got {
		if arg == "--filename=pod.yaml" || arg == "--runtime-endpoint=unix:///x" {
			t.Errorf("flags for the daemon %v hold %s, which is not a global flag of serve", got, arg)
		}
	}
}
