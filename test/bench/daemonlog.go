package main

import (
	"os"
	"strings"
	"time"
)

// serverTimes are the RPC durations the daemon logged itself (its
// interceptor's "rpc" lines at debug level), by short method name: the
// client-side time minus these is gRPC and socket overhead.
type serverTimes map[string][]time.Duration

// logOffset is the daemon log's current size, to parse one phase's lines.
func (e *env) logOffset() int64 {
	st, err := os.Stat(e.daemonLog())
	if err != nil {
		return 0
	}
	return st.Size()
}

// readServerTimes parses the rpc lines logged between two offsets, dropping
// the first call of each method (the warm-up cycle).
func (e *env) readServerTimes(from, to int64) serverTimes {
	data, err := os.ReadFile(e.daemonLog())
	if err != nil || from > int64(len(data)) || to > int64(len(data)) || from > to {
		return nil
	}
	out := serverTimes{}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data[from:to]), "\n") {
		method, took, ok := parseRPCLine(line)
		if !ok {
			continue
		}
		if !seen[method] {
			seen[method] = true
			continue
		}
		out[method] = append(out[method], took)
	}
	return out
}

// parseRPCLine reads `msg=rpc method=/runtime.v1.RuntimeService/X
// duration=1.5ms` from a slog text line.
func parseRPCLine(line string) (method string, took time.Duration, ok bool) {
	if !strings.Contains(line, " msg=rpc ") {
		return "", 0, false
	}
	var durText string
	for _, field := range strings.Fields(line) {
		if v, found := strings.CutPrefix(field, "method="); found {
			method = v[strings.LastIndexByte(v, '/')+1:]
		}
		if v, found := strings.CutPrefix(field, "duration="); found {
			durText = v
		}
	}
	took, err := time.ParseDuration(durText)
	if method == "" || err != nil {
		return "", 0, false
	}
	return method, took, true
}
