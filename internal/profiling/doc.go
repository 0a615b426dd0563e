// Package profiling serves Go's runtime profiles (net/http/pprof) of berth
// serve on a root-only unix socket, when [debug] pprof_socket asks for it:
// CPU, heap, goroutines, and the mutex and block profiles, whose sampling
// it turns on. Nothing listens on a network port.
package profiling
