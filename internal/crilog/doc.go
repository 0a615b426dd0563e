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
// The monitor (native/berth-monitor, in C) writes the logs; this package
// reads them (ReadRecords, for `berth logs` and termination messages) and
// formats a record (AppendRecord) for tests that need a log.
package crilog
