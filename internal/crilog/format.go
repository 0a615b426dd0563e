package crilog

import "time"

// Stream names the container stream a record came from.
type Stream string

// The two streams a container log holds.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// MaxContent is the longest content of one record; the monitor splits
// longer lines into P records of this size.
const MaxContent = 16 * 1024

// AppendRecord appends one record of stream to dst, stamped t, in the form
// the monitor (native/berth-monitor) writes and ParseRecord reads. content
// must hold no newline.
func AppendRecord(dst []byte, t time.Time, stream Stream, partial bool, content []byte) []byte {
	tag := " F "
	if partial {
		tag = " P "
	}
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, ' ')
	dst = append(dst, stream...)
	dst = append(dst, tag...)
	dst = append(dst, content...)
	return append(dst, '\n')
}
