package network

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// onSpareThread runs fn on a goroutine locked to an OS thread that is not
// the process's main thread, and waits for it. fn may move its thread into
// other namespaces; it reports whether it restored the thread. A thread that
// was not restored stays locked, so Go ends it with the goroutine — but Go
// never ends the main thread: it would be wedged, forever in the pod's
// namespace, keeping that namespace (and its veth) alive after Unpin. So
// when the goroutine lands on the main thread, it holds that thread locked
// and runs fn from another goroutine, which must then get another thread.
func onSpareThread(fn func() (restored bool)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			onSpareThread(fn)
			runtime.UnlockOSThread()
			return
		}
		if fn() {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}
