package eviction

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// ContainerUsage is one container's usage, for eviction messages.
type ContainerUsage struct {
	Name   string
	Memory int64 // working set, bytes
	Disk   int64 // writable layer and logs, bytes
}

// PodUsage is what a pod uses of the resources the signals watch.
type PodUsage struct {
	Memory     int64 // working set of its containers, bytes
	Disk       int64 // local storage: writable layers, logs, emptyDirs, bytes
	Inodes     int64
	Processes  int64
	Containers []ContainerUsage
}

// Candidate is a pod that may be evicted, with its usage (Known false:
// the runtime reported none; kubelet ranks such pods first).
type Candidate struct {
	Pod   *v1.Pod
	Usage PodUsage
	Known bool
}

// Rank orders pods for eviction under a signal, first to go first, as
// kubelet's rank functions: memory by usage above requests (yes first),
// then priority (lower first), then usage minus requests (larger first);
// nodefs and imagefs the same with ephemeral-storage (inodes by count);
// PIDs by priority, then process count.
func Rank(s Signal, pods []Candidate) {
	var cmps []func(a, b *Candidate) int
	switch s.Resource() {
	case v1.ResourceMemory:
		cmps = []func(a, b *Candidate) int{exceeds(v1.ResourceMemory, memoryOf), byPriority, above(v1.ResourceMemory, memoryOf)}
	case v1.ResourceEphemeralStorage:
		cmps = []func(a, b *Candidate) int{exceeds(v1.ResourceEphemeralStorage, diskOf), byPriority, above(v1.ResourceEphemeralStorage, diskOf)}
	case ResourceInodes:
		cmps = []func(a, b *Candidate) int{unknownFirst, byPriority, larger(func(c *Candidate) int64 { return c.Usage.Inodes })}
	default:
		cmps = []func(a, b *Candidate) int{unknownFirst, byPriority, larger(func(c *Candidate) int64 { return c.Usage.Processes })}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		for _, cmp := range cmps {
			if r := cmp(&pods[i], &pods[j]); r != 0 {
				return r < 0
			}
		}
		return false
	})
}

func memoryOf(c *Candidate) int64 { return c.Usage.Memory }
func diskOf(c *Candidate) int64   { return c.Usage.Disk }

// unknownFirst puts pods without usage before the others.
func unknownFirst(a, b *Candidate) int { return cmpBool(!a.Known, !b.Known) }

// exceeds puts pods without usage first, then those using more than they
// request.
func exceeds(r v1.ResourceName, usage func(*Candidate) int64) func(a, b *Candidate) int {
	return func(a, b *Candidate) int {
		if !a.Known || !b.Known {
			return unknownFirst(a, b)
		}
		return cmpBool(usage(a) > request(a.Pod, r), usage(b) > request(b.Pod, r))
	}
}

// above puts the pod using more beyond its request first.
func above(r v1.ResourceName, usage func(*Candidate) int64) func(a, b *Candidate) int {
	return larger(func(c *Candidate) int64 { return usage(c) - request(c.Pod, r) })
}

func larger(of func(*Candidate) int64) func(a, b *Candidate) int {
	return func(a, b *Candidate) int {
		x, y := of(a), of(b)
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	}
}

// byPriority puts the lower priority first.
func byPriority(a, b *Candidate) int {
	x, y := priority(a.Pod), priority(b.Pod)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// cmpBool puts true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func request(pod *v1.Pod, r v1.ResourceName) int64 {
	q := podspec.PodRequests(pod)[r]
	return q.Value()
}

// Message is kubelet's status message for a pod evicted for t:
// "The node was low on resource: memory. Threshold quantity: 100Mi,
// available: 51200Ki. " and, for memory and ephemeral storage, a sentence
// per container using more than it requests.
func Message(t Threshold, obs Observations, c Candidate) string {
	r := t.Signal.Resource()
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowMessageFmt, r)
	if o, ok := obs[t.Signal]; ok {
		threshold := quantity(r, t.Value.bytes(o.Capacity))
		if t.Value.Quantity != nil {
			threshold = *t.Value.Quantity
		}
		fmt.Fprintf(&b, thresholdMetMessageFmt, &threshold, quantityPtr(r, o.Available))
	}
	if !c.Known || (r != v1.ResourceMemory && r != v1.ResourceEphemeralStorage) {
		return b.String()
	}
	for _, u := range c.Usage.Containers {
		spec, _, found := podspec.FindContainer(c.Pod, u.Name)
		if !found {
			continue
		}
		used := u.Memory
		if r == v1.ResourceEphemeralStorage {
			used = u.Disk
		}
		req := spec.Resources.Requests[r]
		if used > req.Value() {
			fmt.Fprintf(&b, containerMessageFmt, u.Name, quantityPtr(r, used), req.String(), r)
		}
	}
	return b.String()
}

// quantity formats bytes in binary units, counts as plain numbers.
func quantity(r v1.ResourceName, n int64) resource.Quantity {
	if r == v1.ResourceMemory || r == v1.ResourceEphemeralStorage {
		return *resource.NewQuantity(n, resource.BinarySI)
	}
	return *resource.NewQuantity(n, resource.DecimalSI)
}

func quantityPtr(r v1.ResourceName, n int64) *resource.Quantity {
	q := quantity(r, n)
	return &q
}
