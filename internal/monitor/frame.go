package monitor

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/berth-dev/berth/internal/errdefs"
)

// The kinds of frame an attach session carries after its Response.
const (
	FrameStdout     byte = 1 // monitor to client: container output
	FrameStderr     byte = 2 // monitor to client: container error output
	FrameStdin      byte = 3 // client to monitor: bytes for the container's stdin
	FrameStdinClose byte = 4 // client to monitor: the client's stdin ended
	FrameResize     byte = 5 // client to monitor: width, height (uint16 each)
)

// MaxFramePayload bounds one frame's payload.
const MaxFramePayload = 32 << 10

// frameHeaderSize is one kind byte and a big-endian uint32 length.
const frameHeaderSize = 5

// WriteFrame writes one frame in a single Write call.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload) > MaxFramePayload {
		return fmt.Errorf("frame: payload of %d bytes: %w", len(payload), errdefs.ErrInvalidArgument)
	}
	buf := make([]byte, frameHeaderSize+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:frameHeaderSize], uint32(len(payload)))
	copy(buf[frameHeaderSize:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame. A stream that ends between frames returns
// io.EOF; one that ends inside a frame io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) (kind byte, payload []byte, err error) {
	var header [frameHeaderSize]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(header[1:])
	if size > MaxFramePayload {
		return 0, nil, fmt.Errorf("frame: payload of %d bytes: %w", size, errdefs.ErrInvalidArgument)
	}
	payload = make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return header[0], payload, nil
}

// ResizePayload encodes a window size for FrameResize.
func ResizePayload(width, height uint16) []byte {
	p := make([]byte, 4)
	binary.BigEndian.PutUint16(p[0:2], width)
	binary.BigEndian.PutUint16(p[2:4], height)
	return p
}
