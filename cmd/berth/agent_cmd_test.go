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

func TestMaxContainerRestartPeriodFlag(t *testing.T) {
	parse := func(args ...string) (*agentFlags, error) {
		var f agentFlags
		cmd := &cobra.Command{Use: "agent"}
		f.bind(cmd)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f, f.validate()
	}
	if f, err := parse(); err != nil || f.maxRestartPeriod != 300*time.Second {
		t.Errorf("default: %v, %v; want kubelet's 300s", f.maxRestartPeriod, err)
	}
	if f, err := parse("--max-container-restart-period=2s"); err != nil || f.maxRestartPeriod != 2*time.Second {
		t.Errorf("2s: %v, %v", f.maxRestartPeriod, err)
	}
	for _, arg := range []string{"--max-container-restart-period=500ms", "--max-container-restart-period=6m", "--max-container-restart-period=0s"} {
		if _, err := parse(arg); err == nil || !strings.Contains(err.Error(), "--max-container-restart-period: maxContainerRestartPeriod") ||
			!strings.Contains(err.Error(), "must be between 1s and 5m0s") {
			t.Errorf("%s: %v; want refused with the range", arg, err)
		}
	}
}
