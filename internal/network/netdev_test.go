package network

import (
	"os"
	"strings"
	"testing"
)

const sampleNetDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1200      12    0    0    0     0          0         0     1200      12    0    0    0     0       0          0
  eth0: 5000123    4100    7    1    0     0          0         3   812345     900    2    5    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	got, err := ParseNetDev(strings.NewReader(sampleNetDev))
	if err != nil {
		t.Fatal(err)
	}
	want := []InterfaceCounters{
		{Name: "lo", RxBytes: 1200, RxPackets: 12, TxBytes: 1200, TxPackets: 12},
		{Name: "eth0", RxBytes: 5000123, RxPackets: 4100, RxErrors: 7, RxDropped: 1, TxBytes: 812345, TxPackets: 900, TxErrors: 2, TxDropped: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d interfaces, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("interface %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseNetDevRejectsShortLine(t *testing.T) {
	bad := "h1\nh2\n  eth0: 1 2 3\n"
	if _, err := ParseNetDev(strings.NewReader(bad)); err == nil {
		t.Fatal("short line accepted")
	}
}

func TestInterfaceStatsOfOwnNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setns needs root")
	}
	got, err := InterfaceStats("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range got {
		found = found || c.Name == "lo"
	}
	if !found {
		t.Errorf("no lo in %+v", got)
	}
}
