package main

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// Pod and container names complete from the agent's pods: in the
// namespace -n names (every one with -A), after the resource word, each
// pod once; -c offers the named pod's containers, init containers too.
func TestCompletion(t *testing.T) {
	flags := serveFakeAgent(t, &fakeAgent{details: []agentapi.PodDetail{
		testPod("default", "web", "init:setup", "app", "sidecar"),
		testPod("default", "worker", "main"),
		testPod("default", "db", "pg"),
		testPod("other", "wiki", "app"),
	}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "w"}, "web worker"},
		{[]string{"logs", ""}, "db web worker"},
		{[]string{"logs", "web", ""}, ""},
		{[]string{"logs", "-n", "other", ""}, "wiki"},
		{[]string{"logs", "web", "-c", ""}, "setup app sidecar"},
		{[]string{"logs", "web", "-c", "s"}, "setup sidecar"},
		{[]string{"exec", "worker", "-c", ""}, "main"},
		{[]string{"exec", "d"}, "db"},
		{[]string{"describe", ""}, "pod"},
		{[]string{"describe", "pod", ""}, "db web worker"},
		{[]string{"describe", "pod", "db", ""}, ""},
		{[]string{"get", "pods", "web", ""}, "db worker"},
		{[]string{"get", "pods", "-A", "w"}, "web wiki worker"},
		{[]string{"delete", "pod", "db", "w"}, "web worker"},
		{[]string{"logs", "nosuchpod", "-c", ""}, ""},
	} {
		out, err := runBerth(t, append(append([]string{"__complete"}, flags...), tc.args...)...)
		if err != nil {
			t.Errorf("complete %v: %v", tc.args, err)
			continue
		}
		var got []string
		for _, line := range strings.Split(out, "\n") {
			if line == "" || strings.HasPrefix(line, ":") || strings.HasPrefix(line, "Completion ended") {
				continue
			}
			got = append(got, line)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("complete %v = %q; want %q", tc.args, strings.Join(got, " "), tc.want)
		}
	}
}
