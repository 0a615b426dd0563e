// Package agentapi is the node agent's wire API: HTTP + JSON on a unix
// socket (<state>/agent.sock, 0600). It holds the request and response
// types (api.go lists the routes), the server (ListenAPI serves any
// PodService: package agent's *Agent is the one berth runs) and the
// client that `berth run`, `apply`, `delete`, `get`, `describe`, `logs`,
// `exec`, `debug` (which adds ephemeral containers) and `cp` use. It knows nothing of how pods are run.
package agentapi
