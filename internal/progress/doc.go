// Package progress renders the progress of an image pull for a person
// watching `berth pull`, or `berth run` while the agent pulls a pod's image.
//
// On a terminal it keeps one line per layer (short digest, state, a bar,
// bytes done/total, rate) and a total line (bytes, rate, ETA), redrawn in
// place by Tick, which the caller runs at most ~10 times a second; the final
// state stays on screen. Anywhere else it writes plain lines: one when a
// layer starts, one when it ends (with its size and duration), and a summary;
// never an ANSI escape. A pull whose source reports no layers (a CRI
// runtime other than berth tells only when a pull began and ended) shows
// its elapsed time, then "pulled REF in 1.2s (2.1MB)" with the image's size
// when its done event carries one.
//
// Rules:
//   - Pure: a Renderer writes only to its io.Writer and reads time only from
//     its clock, so tests drive it with a fake clock and compare output.
//   - Update is cheap and safe from many goroutines (pull workers call it);
//     on a terminal it only records, drawing happens in Tick and Finish.
//   - This package knows nothing of registries or the image store: callers
//     convert their events into Event.
package progress
