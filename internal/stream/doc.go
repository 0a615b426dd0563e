// Package stream is berth's CRI streaming server: the HTTP endpoint (on
// loopback by default) that kubelet and crictl reach through the URLs that
// the Exec, Attach and PortForward RPCs return. It implements the Runtime of
// k8s.io/kubelet/pkg/cri/streaming (SPDY and WebSocket) on small interfaces
// onto internal/pod, so it holds no state of its own beyond the library's
// one-time tokens.
//
// Rules: the package never runs runc or makes namespace syscalls itself:
// execs go through pod.Service.Exec, attaches through pod.Service.Attach (the
// pod's monitor holds the container's stdio), port forwarding dials through
// network.DialInNamespace. Every stream it opens is closed when the
// request ends.
package stream
