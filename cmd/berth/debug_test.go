package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// parseDebug runs berth debug's argument checks and returns its options.
func parseDebug(args []string) (debugOptions, error) {
	var got debugOptions
	cmd := debugCommand(&globalOptions{}, func(_ *cobra.Command, o debugOptions, _ string) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return got, cmd.Execute()
}

// berth debug parses its arguments as kubectl debug does: one pod, the
// command after --, -t only with -i, --image required; -i attaches.
func TestDebugArguments(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(o debugOptions) bool
	}{
		{args: []string{"web", "--image=busybox", "--", "ps", "aux"}, check: func(o debugOptions) bool {
			return reflect.DeepEqual(o.args, []string{"ps", "aux"}) && !o.attach
		}},
		{args: []string{"web", "-it", "--image=busybox", "--target=app"}, check: func(o debugOptions) bool {
			return o.attach && o.stdin && o.tty && o.target == "app" && len(o.args) == 0
		}},
		{args: []string{"web", "-i", "--attach=false", "--image=busybox"}, check: func(o debugOptions) bool { return !o.attach }},
		{args: []string{"web"}, wantErr: "you must specify --image"},
		{args: []string{"web", "-t", "--image=busybox"}, wantErr: "-i/--stdin is required"},
		{args: []string{"web", "ps", "--image=busybox"}, wantErr: "the command goes after --"},
		{args: []string{"web", "other", "--image=busybox", "--", "ps"}, wantErr: "one pod before --"},
		{args: []string{"web", "--image=busybox", "--image-pull-policy=Sometimes"}, wantErr: "invalid image pull policy: Sometimes"},
		{args: []string{"web", "--image=busybox", "--profile=root"}, wantErr: `unknown profile "root"`},
	} {
		got, err := parseDebug(tc.args)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("debug %q: err = %v; want %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("debug %q: %v", tc.args, err)
		case tc.wantErr == "" && !tc.check(got):
			t.Errorf("debug %q: options %+v", tc.args, got)
		}
	}
}

// The debug container is kubectl debug's: stdin and tty as asked, the
// command (or, with --arguments-only, the args), env sorted by name, the
// target, and the profile's security context.
func TestDebugContainer(t *testing.T) {
	o := debugOptions{image: "busybox", stdin: true, tty: true, target: "app", pullPolicy: "Never",
		env: map[string]string{"B": "2", "A": "1"}, profile: profileGeneral, args: []string{"sh"}}
	ec := o.ephemeralContainer("debugger-x")
	want := v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debugger-x", Image: "busybox", ImagePullPolicy: v1.PullNever, Command: []string{"sh"},
			Env:   []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Stdin: true, TTY: true, TerminationMessagePolicy: v1.TerminationMessageReadFile,
			SecurityContext: &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"SYS_PTRACE"}}},
		},
		TargetContainerName: "app",
	}
	if !reflect.DeepEqual(ec, want) {
		t.Errorf("debug container:\n%+v\nwant\n%+v", ec, want)
	}
	o.argsOnly, o.profile = true, profileSysadmin
	ec = o.ephemeralContainer("debugger-x")
	if ec.Command != nil || !reflect.DeepEqual(ec.Args, []string{"sh"}) || !ptr.Deref(ec.SecurityContext.Privileged, false) {
		t.Errorf("--arguments-only --profile=sysadmin: command %q args %q security %+v", ec.Command, ec.Args, ec.SecurityContext)
	}
}

// The default name is debugger-<5 characters>, another one when taken.
func TestDebugContainerName(t *testing.T) {
	detail := testPod("default", "web", "app")
	pod := &detail.Pod
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger-aaaaa"}}}
	suffixes := []string{"aaaaa", "bbbbb"}
	next := func(n int) string {
		s := suffixes[0][:n]
		suffixes = suffixes[1:]
		return s
	}
	if got := debugContainerName(pod, "", next); got != "debugger-bbbbb" {
		t.Errorf("name = %q; want debugger-bbbbb (debugger-aaaaa is taken)", got)
	}
	if got := debugContainerName(pod, "mine", next); got != "mine" {
		t.Errorf("name with -c = %q; want mine", got)
	}
}

// Without -i, berth debug sends the pod's ephemeral containers with the
// new one appended, says which name it chose, and returns.
func TestDebugAddsTheContainer(t *testing.T) {
	detail := testPod("default", "web", "app")
	detail.Pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "old", Image: "busybox"}}}
	f := &fakeAgent{details: []agentapi.PodDetail{detail}}
	flags := serveFakeAgent(t, f)
	out, err := runBerth(t, append(flags, "debug", "web", "--image=busybox", "--target=app", "--profile=general", "--", "ps")...)
	if err != nil {
		t.Fatalf("debug: %v\n%s", err, out)
	}
	if len(f.ephemeral) != 1 || len(f.ephemeral[0]) != 2 || f.ephemeral[0][0].Name != "old" {
		t.Fatalf("the agent got %+v; want the old ephemeral container and a new one", f.ephemeral)
	}
	added := f.ephemeral[0][1]
	if !strings.HasPrefix(added.Name, "debugger-") || len(added.Name) != len("debugger-")+5 || added.TargetContainerName != "app" ||
		!reflect.DeepEqual(added.Command, []string{"ps"}) {
		t.Errorf("added %+v; want debugger-<5>, target app, command ps", added)
	}
	for _, want := range []string{"Defaulting debug container name to " + added.Name + ".", `Targeting container "app".`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := runBerth(t, append(flags, "debug", "nope", "--image=busybox")...); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("debug of an unknown pod: err = %v; want not found", err)
	}
}
