package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

func TestContainerLogFlags(t *testing.T) {
	parse := func(args ...string) (*agentFlags, error) {
		var f agentFlags
		cmd := &cobra.Command{Use: "agent"}
		f.bind(cmd)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f, f.validate()
	}
	f, err := parse()
	if err != nil || f.logRotation != logrotate.DefaultPolicy() {
		t.Errorf("defaults: %+v, %v; want the kubelet's %+v", f.logRotation, err, logrotate.DefaultPolicy())
	}
	f, err = parse("--container-log-max-size=256Ki", "--container-log-max-files=4",
		"--container-log-monitor-interval=1s", "--container-log-max-workers=2")
	want := logrotate.Policy{MaxSize: 256 << 10, MaxFiles: 4, Interval: time.Second, Workers: 2}
	if err != nil || f.logRotation != want {
		t.Errorf("set: %+v, %v; want %+v", f.logRotation, err, want)
	}
	for _, tc := range []struct{ arg, want string }{
		{"--container-log-max-size=ten", `--container-log-max-size "ten"`},
		{"--container-log-max-size=0", "max size 0: must be greater than 0"},
		{"--container-log-max-files=1", "max files 1: must be at least 2"},
		{"--container-log-monitor-interval=100ms", "monitor interval 100ms: must be at least 1s"},
		{"--container-log-max-workers=0", "max workers 0: must be at least 1"},
	} {
		if _, err := parse(tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.arg, err, tc.want)
		}
	}
}
