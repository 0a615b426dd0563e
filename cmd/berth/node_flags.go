package main

import (
	"fmt"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/nodefit"
)

// nodeFlags are kubelet's --node-labels, --register-with-taints and
// --max-pods: the node's labels (over kubelet's well-known ones), taints
// and pods capacity, which pods are admitted against.
type nodeFlags struct {
	labels, taints string
	maxPods        int
}

func (f *nodeFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.labels, "node-labels", "",
		"labels of the node (key=value, comma-separated), over kubernetes.io/hostname, os and arch; kubernetes.io and k8s.io keys only from kubelet's allowed set and the kubelet.kubernetes.io and node.kubernetes.io prefixes")
	fs.StringVar(&f.taints, "register-with-taints", "",
		"taints of the node (key[=value]:NoSchedule|PreferNoSchedule|NoExecute, comma-separated): pods that do not tolerate a NoSchedule or NoExecute one are rejected")
	fs.IntVar(&f.maxPods, "max-pods", nodefit.DefaultMaxPods,
		"how many pods the node runs at once (its pods capacity): a bare pod beyond it is rejected OutOfpods, a controller's pod waits Pending")
}

// parse validates the flags as kubelet does; errors name the flag.
func (f *nodeFlags) parse() (map[string]string, []v1.Taint, error) {
	labels, err := nodefit.ParseLabels(f.labels)
	if err != nil {
		return nil, nil, err
	}
	taints, err := nodefit.ParseTaints(f.taints)
	if err != nil {
		return nil, nil, err
	}
	if f.maxPods < 1 {
		return nil, nil, fmt.Errorf("--max-pods %d: want at least 1", f.maxPods)
	}
	return labels, taints, nil
}
