package probe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubeVersion is the Kubernetes minor release whose API berth implements; it
// appears in the User-Agent of probes and hooks (kube-probe/1.34).
const kubeVersion = "1.34"

// maxOutput bounds what is kept of an HTTP body or an exec output: 10 KiB.
const maxOutput = 10 << 10

// outcome is one probe attempt as the package sees it.
type outcome struct {
	result  Result
	warning bool
	message string
}

func success(msg string) outcome { return outcome{result: Success, message: msg} }
func failure(msg string) outcome { return outcome{result: Failure, message: msg} }
func unknown(err error) outcome  { return outcome{result: Unknown, message: err.Error()} }

// Run performs probe p once against t and returns its result with the
// probe's output or, for Failure and Unknown, the reason. It honours
// p.TimeoutSeconds (at least one second) and ctx. ex is needed only for exec
// probes.
func Run(ctx context.Context, p *v1.Probe, t Target, ex Execer) (Result, string) {
	o := runProbe(ctx, p, t, ex, time.Second)
	return o.result, o.message
}

// runProbe performs p once; unit is the length of one probe "second".
func runProbe(ctx context.Context, p *v1.Probe, t Target, ex Execer, unit time.Duration) outcome {
	if p == nil {
		return unknown(errors.New("no probe"))
	}
	timeout := seconds(p.TimeoutSeconds, 1, unit)
	probeCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var o outcome
	switch h := p.ProbeHandler; {
	case h.Exec != nil:
		o = execProbe(ctx, h.Exec, t, ex, timeout, unit)
	case h.HTTPGet != nil:
		o = httpProbe(probeCtx, h.HTTPGet, t, timeout)
	case h.TCPSocket != nil:
		o = tcpProbe(probeCtx, h.TCPSocket, t, timeout)
	case h.GRPC != nil:
		o = grpcProbe(probeCtx, h.GRPC, t, timeout)
	default:
		return unknown(errors.New("probe has no handler"))
	}
	if ctx.Err() != nil {
		// The caller gave up (the container was removed): no verdict.
		return unknown(fmt.Errorf("probe abandoned: %w", ctx.Err()))
	}
	return o
}

// seconds converts a probe field to a duration, replacing values below one
// with def (the API default).
func seconds(n int32, def int32, unit time.Duration) time.Duration {
	if n < 1 {
		n = def
	}
	return time.Duration(n) * unit
}

// host is where a network handler connects: its own host field, else the pod.
func (t Target) host(handlerHost string) (string, error) {
	switch {
	case handlerHost != "":
		return handlerHost, nil
	case t.PodIP != "":
		return t.PodIP, nil
	case t.HostNetwork:
		return "127.0.0.1", nil
	}
	return "", errors.New("the pod has no IP address")
}

// resolvePort turns a handler's port (a number, a container port name, or a
// number written as a string) into a port number.
func (t Target) resolvePort(port intstr.IntOrString) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = port.IntValue()
	case intstr.String:
		var found bool
		n, found = t.namedPort(port.StrVal)
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return -1, fmt.Errorf("port %q: no container port has that name", port.StrVal)
			}
			n = v
		}
	default:
		return -1, fmt.Errorf("port %v: neither a number nor a name", port)
	}
	if n < 1 || n > 65535 {
		return -1, fmt.Errorf("invalid port number: %d", n)
	}
	return n, nil
}

func (t Target) namedPort(name string) (int, bool) {
	if t.Container == nil || name == "" {
		return 0, false
	}
	for _, p := range t.Container.Ports {
		if p.Name == name {
			return int(p.ContainerPort), true
		}
	}
	return 0, false
}
