package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/config"
)

func TestNodeFlags(t *testing.T) {
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
	if err != nil || f.node.maxPods != 110 {
		t.Fatalf("defaults: --max-pods %d, %v; want kubelet's 110", f.node.maxPods, err)
	}
	f, err = parse("--node-labels=disk=ssd,node.kubernetes.io/pool=a", "--register-with-taints=dedicated=gpu:NoSchedule", "--max-pods=8")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := f.config(config.Config{RootDir: t.TempDir()}, nil, nil); err != nil || cfg.MaxPods != 8 {
		t.Errorf("--max-pods=8: Config.MaxPods %d, %v", cfg.MaxPods, err)
	}
	labels, taints, err := f.node.parse()
	if err != nil || labels["disk"] != "ssd" || labels["node.kubernetes.io/pool"] != "a" ||
		len(taints) != 1 || taints[0] != (v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}) {
		t.Errorf("parsed %v %v %v", labels, taints, err)
	}
	for _, tc := range []struct{ arg, want string }{
		{"--node-labels=node-role.kubernetes.io/control-plane=", "--node-labels: unknown 'kubernetes.io' or 'k8s.io' labels"},
		{"--node-labels=disk", "--node-labels: \"disk\": want key=value"},
		{"--register-with-taints=dedicated=gpu", "--register-with-taints: \"dedicated=gpu\""},
		{"--register-with-taints=k:Sometimes", "effect \"Sometimes\""},
		{"--max-pods=0", "--max-pods 0: want at least 1"},
		{"--max-pods=-3", "--max-pods -3: want at least 1"},
	} {
		if _, err := parse(tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.arg, err, tc.want)
		}
	}
}
