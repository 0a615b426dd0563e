package pod

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Linux's real-time signal range as the C library exposes it (glibc keeps
// 32 and 33 for itself), which image configs and the Kubernetes API mean by
// SIGRTMIN+n and SIGRTMAX-n.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// stopSignal is the CRI config's stop signal, else the image's, else SIGTERM.
func (s *Service) stopSignal(rec *Container) syscall.Signal {
	if n, ok := criSignal(rec.Config.GetStopSignal()); ok {
		return n
	}
	if n, ok := parseSignal(rec.StopSignal); ok {
		return n
	}
	return syscall.SIGTERM
}

// criSignal maps a CRI Signal (SIGNAL_SIGUSR1, SIGNAL_SIGRTMINPLUS3, ...)
// to the host's; SIGNAL_RUNTIME_DEFAULT and unknown values map to nothing.
func criSignal(sig runtimeapi.Signal) (syscall.Signal, bool) {
	if sig == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return 0, false
	}
	name, ok := strings.CutPrefix(sig.String(), "SIGNAL_")
	if !ok {
		return 0, false
	}
	return parseSignal(strings.NewReplacer("PLUS", "+", "MINUS", "-").Replace(name))
}

// parseSignal reads an image config's StopSignal: "SIGTERM", "TERM", "15",
// "SIGRTMIN+3" or "RTMAX-1".
func parseSignal(v string) (syscall.Signal, bool) {
	v = strings.ToUpper(strings.TrimSpace(v))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		return syscall.Signal(n), n > 0 && n <= sigRTMax
	}
	v = "SIG" + strings.TrimPrefix(v, "SIG")
	for _, rt := range []struct {
		prefix, sep string
		base, sign  int
	}{{"SIGRTMIN", "+", sigRTMin, 1}, {"SIGRTMAX", "-", sigRTMax, -1}} {
		rest, ok := strings.CutPrefix(v, rt.prefix)
		if !ok {
			continue
		}
		off := 0
		if rest != "" {
			digits, ok := strings.CutPrefix(rest, rt.sep)
			n, err := strconv.Atoi(digits)
			if !ok || err != nil {
				return 0, false
			}
			off = n
		}
		n := rt.base + rt.sign*off
		return syscall.Signal(n), n >= sigRTMin && n <= sigRTMax
	}
	if n := unix.SignalNum(v); n != 0 {
		return n, true
	}
	return 0, false
}
