// Package crilog owns the CRI container log format that kubelet and
// `berth logs` read.
//
// A log file is a sequence of records, one per line:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>\n
//
// F closes a line; P is a fragment of a longer line. A line longer than
// MaxContent bytes is written as P records of MaxContent bytes followed by a
// final F. A stream that ends without a newline gets its unfinished line
// written as P, as containerd does. A trailing "\r\n" counts as a newline.
// Writer serialises whole records from several streams into one file and
// can reopen the file after rotation. It holds the pod's log directory
// and opens the log beneath it with openat2 (RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS, O_NOFOLLOW): a container that can write the log
// directory cannot make the monitor, root, write through a link (open.go).
// The package uses only the standard library and x/sys: it is linked into
// berth-monitor.
package crilog
