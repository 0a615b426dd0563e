// Package agentapi is the node agent's wire API: HTTP + JSON on a unix
// socket (<state>/agent.sock, 0600). It holds the request and response
// types (api.go lists the routes), the server (ListenAPI serves any
// PodService: package agent's *Agent is the one berth runs) and the
// client that `berth run`, `apply`, `delete`, `get`, `describe`, `logs`
// and `exec` use. It knows nothing of how pods are run.
package agentapi
