//go:build tools

// Package tools pins the CRI tools berth is tested with (crictl, critest),
// in a module of their own so that their dependencies stay out of berth's.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
