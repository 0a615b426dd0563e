package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkLogCopy measures how fast `berth logs` turns a CRI log into
// output: a follower slower than the container's writer loses the files
// rotation removes before it reads them.
func BenchmarkLogCopy(b *testing.B) {
	var log bytes.Buffer
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&log, "2026-11-24T16:16:45.629123456Z stdout F line %d %s\n", i, chattyPad)
	}
	b.SetBytes(int64(log.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := newLogCopier(io.Discard, logFilter{tail: -1})
		var pending []byte
		if err := readRecords(bufio.NewReader(bytes.NewReader(log.Bytes())), &pending, c.add); err != nil {
			b.Fatal(err)
		}
		c.flush()
	}
}

const chattyPad = "............................................................"
