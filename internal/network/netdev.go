package network

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// InterfaceCounters are the cumulative traffic counters of one network
// interface, as the kernel reports them in /proc/net/dev.
type InterfaceCounters struct {
	Name      string
	RxBytes   uint64
	RxPackets uint64
	RxErrors  uint64
	RxDropped uint64
	TxBytes   uint64
	TxPackets uint64
	TxErrors  uint64
	TxDropped uint64
}

// InterfaceStats reads the counters of every interface in the network
// namespace pinned at netnsPath. It enters the namespace on a thread of its
// own, which is discarded if it cannot return to the host namespace.
func InterfaceStats(netnsPath string) ([]InterfaceCounters, error) {
	type result struct {
		counters []InterfaceCounters
		err      error
	}
	var r result
	onSpareThread(func() bool {
		var restored bool
		r.counters, r.err, restored = readNetDevIn(netnsPath)
		return restored
	})
	if r.err != nil {
		return nil, fmt.Errorf("netns %s: interface counters: %w", netnsPath, r.err)
	}
	return r.counters, nil
}

// readNetDevIn reads /proc/net/dev inside the namespace (inNetns);
// restored reports the thread is clean.
func readNetDevIn(netnsPath string) (counters []InterfaceCounters, _ error, restored bool) {
	err, restored := inNetns(netnsPath, func() error {
		f, err := os.Open("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		defer f.Close()
		counters, err = ParseNetDev(f)
		return err
	})
	return counters, err, restored
}

// ParseNetDev parses the /proc/net/dev format: two header lines, then
// "name: rx_bytes rx_packets rx_errs rx_drop ... tx_bytes tx_packets tx_errs
// tx_drop ...".
func ParseNetDev(r io.Reader) ([]InterfaceCounters, error) {
	var out []InterfaceCounters
	sc := bufio.NewScanner(r)
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("net/dev line %d: no interface name", line+1)
		}
		fields := strings.Fields(rest)
		if len(fields) < 16 {
			return nil, fmt.Errorf("net/dev line %d: %d fields, want 16", line+1, len(fields))
		}
		var v [8]uint64
		for i, idx := range []int{0, 1, 2, 3, 8, 9, 10, 11} {
			n, err := strconv.ParseUint(fields[idx], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("net/dev line %d: field %d: %w", line+1, idx+1, err)
			}
			v[i] = n
		}
		out = append(out, InterfaceCounters{
			Name:    strings.TrimSpace(name),
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[4], TxPackets: v[5], TxErrors: v[6], TxDropped: v[7],
		})
	}
	return out, sc.Err()
}
