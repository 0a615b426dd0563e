// Package pulltrack keeps the image pulls of one pod for the agent API
// (GET /v1/pulls): for each image, the pull in progress or the last one
// that ended, with its layers, bytes done and total, and rate.
//
// The agent starts a Pull before it calls CRI PullImage and ends it with
// the outcome and the image's size (ImageStatus). Where the runtime
// reports progress (criclient.PullWatcher: berth serve's image store) the
// Pull is fed its events and is Detailed; elsewhere it says only when it
// started and ended, and claims no bytes it does not know.
//
// Rules: events may come late, twice or out of order from several
// goroutines: bytes only grow, and a layer that ended (done, exists,
// failed) stays so; nothing changes a Pull once it ended. Time comes from
// the clock given to New.
package pulltrack
