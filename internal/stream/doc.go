// Package stream is berth's CRI streaming server: the HTTP endpoint (on
// loopback by default) that kubelet and crictl reach through the URLs that
// the Exec, Attach and PortForward RPCs return. It implements the Runtime of
// k8s.io/cri-streaming (SPDY and WebSocket) on small interfaces
// onto internal/pod.
//
// It also serves exec and attach over WebSocket protocol v5
// (v5.channel.k8s.io) itself, because the library only speaks the older
// WebSocket protocols and answers 403 to clients that offer nothing else,
// such as client-go's WebSocket executor (crictl --transport websocket,
// kubelet proxying kubectl's WebSocket streams). A router in front of the
// library's handler takes those requests; everything else (SPDY, the older
// WebSocket protocols, port forwarding) goes to the library unchanged. To
// find the request behind a token, berth keeps its own copy of the exec and
// attach tokens the library hands out, single use and short lived like the
// library's, and a token serves one stream whichever side answers it. The
// v5 streams run through the same runtime adapter as the library's.
//
// Rules: the package never runs runc or makes namespace syscalls itself:
// execs go through pod.Service.Exec, attaches through pod.Service.Attach (the
// pod's monitor holds the container's stdio), port forwarding dials through
// network.DialInNamespace. Every stream it opens is closed when the
// request ends.
package stream
