package criserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

type fakeStats struct {
	pods *fakePods
}

func (f fakeStats) ContainerStats(id string) (pod.ContainerStats, error) {
	c, err := f.pods.Container(id)
	if err != nil {
		return pod.ContainerStats{}, err
	}
	st := pod.ContainerStats{Container: c, WritableLayer: pod.DiskUsage{Path: "/x/upper", Bytes: 4096, Inodes: 2, Time: time.Unix(5, 0)}}
	if c.State == pod.ContainerRunning {
		st.HasUsage = true
		st.Usage = cgroupstats.Sample{Time: time.Unix(10, 0), CPUUsageNanos: 7e9, MemoryUsage: 300, MemoryWorkingSet: 200, Pids: 2}
		st.NanoCores, st.HasNanoCores = 5e8, true
	}
	return st, nil
}

func (f fakeStats) SandboxStats(id string) (pod.SandboxStats, error) {
	sb, err := f.pods.Sandbox(id)
	if err != nil {
		return pod.SandboxStats{}, err
	}
	st := pod.SandboxStats{Sandbox: sb, Usage: cgroupstats.Sample{Time: time.Unix(10, 0), Pids: 3},
		Interfaces: []pod.InterfaceCounters{{Name: "lo", RxBytes: 1}, {Name: "eth0", RxBytes: 100, TxBytes: 50}, {Name: "net1", TxErrors: 4}}}
	for _, c := range f.pods.containers {
		if c.SandboxID == id {
			cs, _ := f.ContainerStats(c.ID)
			st.Containers = append(st.Containers, cs)
		}
	}
	return st, nil
}

func statsPods() *fakePods {
	md := func(n string) *runtimeapi.ContainerConfig {
		return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: n}, Labels: map[string]string{"app": n}}
	}
	return &fakePods{
		sandboxes: []pod.Sandbox{
			{ID: "sbA", State: pod.SandboxReady, Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "ns"}, Labels: map[string]string{"tier": "web"}}},
			{ID: "sbB", State: pod.SandboxReady, Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "b", Namespace: "ns"}}},
		},
		containers: []pod.Container{
			{ID: "c1", SandboxID: "sbA", State: pod.ContainerRunning, Config: md("one")},
			{ID: "c2", SandboxID: "sbA", State: pod.ContainerExited, Config: md("two")},
			{ID: "c3", SandboxID: "sbB", State: pod.ContainerRunning, Config: md("one")},
		},
	}
}

func newStatsServer() *Server {
	p := statsPods()
	s := New(Config{Sandboxes: p, Containers: p, Images: &fakeImages{}, Network: fakeNetwork{}, Stats: fakeStats{p}})
	s.SetReady()
	return s
}

func TestListContainerStatsFilters(t *testing.T) {
	s := newStatsServer()
	cases := []struct {
		filter *runtimeapi.ContainerStatsFilter
		want   []string
	}{
		{nil, []string{"c1", "c2", "c3"}},
		{&runtimeapi.ContainerStatsFilter{Id: "c2"}, []string{"c2"}},
		{&runtimeapi.ContainerStatsFilter{PodSandboxId: "sbA"}, []string{"c1", "c2"}},
		{&runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{"app": "one"}}, []string{"c1", "c3"}},
		{&runtimeapi.ContainerStatsFilter{PodSandboxId: "sbB", LabelSelector: map[string]string{"app": "two"}}, nil},
	}
	for _, tc := range cases {
		resp, err := s.ListContainerStats(context.Background(), &runtimeapi.ListContainerStatsRequest{Filter: tc.filter})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range resp.GetStats() {
			got = append(got, st.GetAttributes().GetId())
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("filter %v: got %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestContainerStatsConversion(t *testing.T) {
	s := newStatsServer()
	resp, err := s.ContainerStats(context.Background(), &runtimeapi.ContainerStatsRequest{ContainerId: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	st := resp.GetStats()
	if st.GetCpu().GetUsageCoreNanoSeconds().GetValue() != 7e9 || st.GetCpu().GetUsageNanoCores().GetValue() != 5e8 {
		t.Errorf("cpu = %v", st.GetCpu())
	}
	if st.GetMemory().GetWorkingSetBytes().GetValue() != 200 || st.GetMemory().GetUsageBytes().GetValue() != 300 {
		t.Errorf("memory = %v", st.GetMemory())
	}
	if st.GetWritableLayer().GetUsedBytes().GetValue() != 4096 || st.GetWritableLayer().GetInodesUsed().GetValue() != 2 {
		t.Errorf("writable layer = %v", st.GetWritableLayer())
	}
	exited, err := s.ContainerStats(context.Background(), &runtimeapi.ContainerStatsRequest{ContainerId: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if exited.GetStats().GetCpu() != nil || exited.GetStats().GetMemory() != nil || exited.GetStats().GetWritableLayer() == nil {
		t.Errorf("exited container: %v", exited.GetStats())
	}
	_, err = s.ContainerStats(context.Background(), &runtimeapi.ContainerStatsRequest{ContainerId: "nope"})
	wantClass(t, err, errdefs.ErrNotFound)
}

func wantClass(t *testing.T, err, class error) {
	t.Helper()
	if got, want := status.Code(toStatus(err)), status.Code(toStatus(class)); err == nil || got != want {
		t.Errorf("err = %v (%v), want %v", err, got, want)
	}
}

func TestPodSandboxStatsNetworkAndFilters(t *testing.T) {
	s := newStatsServer()
	resp, err := s.PodSandboxStats(context.Background(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: "sbA"})
	if err != nil {
		t.Fatal(err)
	}
	l := resp.GetStats().GetLinux()
	if d := l.GetNetwork().GetDefaultInterface(); d.GetName() != "eth0" || d.GetRxBytes().GetValue() != 100 || d.GetTxBytes().GetValue() != 50 {
		t.Errorf("default interface = %v", d)
	}
	if ifs := l.GetNetwork().GetInterfaces(); len(ifs) != 1 || ifs[0].GetName() != "net1" || ifs[0].GetTxErrors().GetValue() != 4 {
		t.Errorf("other interfaces (lo left out) = %v", ifs)
	}
	if l.GetProcess().GetProcessCount().GetValue() != 3 || len(l.GetContainers()) != 2 {
		t.Errorf("process = %v, %d containers", l.GetProcess(), len(l.GetContainers()))
	}
	list, err := s.ListPodSandboxStats(context.Background(), &runtimeapi.ListPodSandboxStatsRequest{
		Filter: &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"tier": "web"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetStats()) != 1 || list.GetStats()[0].GetAttributes().GetId() != "sbA" {
		t.Errorf("label filter: %v", list.GetStats())
	}
}

func TestStatsWithoutSourceAreUnimplemented(t *testing.T) {
	s := newTestServer(&fakePods{}, &fakeImages{}, nil)
	_, err := s.ListContainerStats(context.Background(), &runtimeapi.ListContainerStatsRequest{})
	wantClass(t, err, errdefs.ErrNotImplemented)
}

// fakeEventStream collects what GetContainerEvents sends.
type fakeEventStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent chan *runtimeapi.ContainerEventResponse
}

func (f *fakeEventStream) Context() context.Context     { return f.ctx }
func (f *fakeEventStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeEventStream) Send(r *runtimeapi.ContainerEventResponse) error {
	f.sent <- r
	return nil
}

func TestGetContainerEventsStreamsWithStatuses(t *testing.T) {
	var broker pod.EventBroker
	p := statsPods()
	s := New(Config{Sandboxes: p, Containers: p, Images: &fakeImages{}, Network: fakeNetwork{}, Events: &broker})
	ctx, cancel := context.WithCancel(context.Background())
	stream := &fakeEventStream{ctx: ctx, sent: make(chan *runtimeapi.ContainerEventResponse, 4)}
	done := make(chan error, 1)
	go func() { done <- s.GetContainerEvents(&runtimeapi.GetEventsRequest{}, stream) }()
	// Publish until the subscription exists (the RPC subscribes asynchronously).
	var got *runtimeapi.ContainerEventResponse
	for got == nil {
		broker.Publish(pod.Event{Type: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, ID: "c1",
			Sandbox: p.sandboxes[0], Containers: p.containers[:2], Time: time.Unix(3, 0)})
		select {
		case got = <-stream.sent:
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got.GetContainerId() != "c1" || got.GetPodSandboxStatus().GetId() != "sbA" || len(got.GetContainersStatuses()) != 2 ||
		got.GetContainersStatuses()[1].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || got.GetCreatedAt() != 3e9 {
		t.Errorf("event = %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stream ended with %v after the client left", err)
	}
}

// TestNetworkUsageHasItsDefaultInterface: a usage without eth0 crashed
// kubelet 1.37 (PodAndContainerStatsFromCRI reads DefaultInterface.Name
// unchecked), so there is none without it.
func TestNetworkUsageHasItsDefaultInterface(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ifaces []pod.InterfaceCounters
		want   []string // default first, then the others; nil: no usage
	}{
		{"no interfaces (host network)", nil, nil},
		{"loopback only (after CNI DEL)", []pod.InterfaceCounters{{Name: "lo", RxBytes: 9}}, nil},
		{"no eth0", []pod.InterfaceCounters{{Name: "lo"}, {Name: "net1", RxBytes: 3}}, nil},
		{"eth0", []pod.InterfaceCounters{{Name: "lo"}, {Name: "eth0", RxBytes: 1}}, []string{"eth0"}},
		{"eth0 and more", []pod.InterfaceCounters{{Name: "net1"}, {Name: "eth0"}, {Name: "net2"}}, []string{"eth0", "net1", "net2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := networkCRI(1, tc.ifaces)
			if tc.want == nil {
				if n != nil {
					t.Fatalf("usage = %v, want none", n)
				}
				return
			}
			if n.GetDefaultInterface() == nil {
				t.Fatalf("usage %v has no default interface", n)
			}
			got := []string{n.GetDefaultInterface().GetName()}
			for _, i := range n.GetInterfaces() {
				if i == nil {
					t.Fatalf("usage %v has a nil interface", n)
				}
				got = append(got, i.GetName())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("interfaces = %v, want %v", got, tc.want)
			}
		})
	}
}

// PSI reaches the CRI with its total in ns (the kernel counts µs); a
// resource without PSI has none, and a container without io.pressure no Io.
func TestContainerStatsCarryPSI(t *testing.T) {
	st := &pod.ContainerStats{HasUsage: true, Usage: cgroupstats.Sample{
		Time:        time.Unix(10, 0),
		CPUPressure: &cgroupstats.Pressure{Some: cgroupstats.PressureData{TotalMicros: 1500, Avg10: 2.5}, Full: cgroupstats.PressureData{TotalMicros: 7}},
		IOPressure:  &cgroupstats.Pressure{Some: cgroupstats.PressureData{TotalMicros: 3}},
	}}
	out := containerStatsCRI(st)
	if got := out.GetCpu().GetPsi(); got.GetSome().GetTotal() != 1_500_000 || got.GetSome().GetAvg10() != 2.5 || got.GetFull().GetTotal() != 7000 {
		t.Errorf("cpu psi = %v, want some total 1500000 ns avg10 2.5, full total 7000 ns", got)
	}
	if out.GetMemory().GetPsi() != nil {
		t.Errorf("memory psi = %v without memory pressure, want none", out.GetMemory().GetPsi())
	}
	if out.GetIo().GetPsi().GetSome().GetTotal() != 3000 || out.GetIo().GetTimestamp() != 10e9 {
		t.Errorf("io = %v, want some total 3000 ns at 10 s", out.GetIo())
	}
	st.Usage.IOPressure = nil
	if out := containerStatsCRI(st); out.GetIo() != nil {
		t.Errorf("io = %v without io pressure, want none", out.GetIo())
	}
}
