package criserver

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
)

// metricDef is one metric of ListPodSandboxMetrics: its descriptor (name,
// help, label keys, type) and where its values come from. The descriptors
// ListMetricDescriptors returns and the values are both made from
// metricTable, so they cannot disagree.
type metricDef struct {
	name   string
	help   string
	typ    runtimeapi.MetricType
	labels []string // label keys after commonLabelKeys, in the order of point.labels

	// Exactly one of these gives the values: per container, or per pod.
	container func(*pod.ContainerStats) []point
	pod       func(*pod.SandboxStats) []point
}

// point is one value of a metric: the values of its def's own labels, in
// their order, and the number.
type point struct {
	labels []string
	value  uint64
}

const (
	counter = runtimeapi.MetricType_COUNTER
	gauge   = runtimeapi.MetricType_GAUGE
)

// The label keys of every metric, as kubelet's cAdvisor gives them:
// container (the CRI container name; POD for pod-level metrics), id (the
// container or sandbox id), image (as the container config names it),
// name (berth's reserved name), namespace and pod (the sandbox's). Each
// metric's own labels follow, in metricDef.labels order: CRI asks only
// that keys and values be in the same order.
var commonLabelKeys = []string{"container", "id", "image", "name", "namespace", "pod"}

// Each metric's own label sets, in cAdvisor's names.
var (
	cpuLabels      = []string{"cpu"}
	failureLabels  = []string{"failure_type", "scope"}
	pageSizeLabels = []string{"pagesize"}
	deviceLabels   = []string{"device"}
	blkioLabels    = []string{"device", "major", "minor", "operation"}
	networkLabels  = []string{"interface"}
	ulimitLabels   = []string{"ulimit"}
)

// Units: CRI values are unsigned integers, so a "_seconds" metric is in
// whole seconds, truncated, as CRI-O sends it (the kernel counts CPU time
// in ns and stalls in µs; cAdvisor's float seconds keep the fraction).
// Times of day are Unix seconds. Bytes are bytes.
const wholeSeconds = " In whole seconds, truncated (CRI values are integers)."

// metricTable is every metric berth serves: cAdvisor's container metric
// set, as kubelet's /metrics/cadvisor exposes it with CRI-O.
var metricTable = []metricDef{
	// CPU (metrics_cgroup.go).
	{name: "container_cpu_usage_seconds_total", typ: counter, labels: cpuLabels, container: fromUsage(cpuUsage),
		help: "Cumulative CPU time consumed by the container, in every CPU (cpu=\"total\")." + wholeSeconds},
	{name: "container_cpu_user_seconds_total", typ: counter, container: fromUsage(cpuUser),
		help: "Cumulative user-mode CPU time consumed by the container." + wholeSeconds},
	{name: "container_cpu_system_seconds_total", typ: counter, container: fromUsage(cpuSystem),
		help: "Cumulative kernel-mode CPU time consumed by the container." + wholeSeconds},
	{name: "container_cpu_cfs_periods_total", typ: counter, container: fromUsage(cfsPeriods),
		help: "Number of elapsed CFS enforcement periods in which the container had runnable tasks."},
	{name: "container_cpu_cfs_throttled_periods_total", typ: counter, container: fromUsage(cfsThrottledPeriods),
		help: "Number of CFS enforcement periods in which the container was throttled."},
	{name: "container_cpu_cfs_throttled_seconds_total", typ: counter, container: fromUsage(cfsThrottledSeconds),
		help: "Total time the container was throttled by its CFS quota." + wholeSeconds},

	// Memory (metrics_cgroup.go).
	{name: "container_memory_usage_bytes", typ: gauge, container: fromUsage(memoryUsage),
		help: "Current memory usage in bytes, page cache included."},
	{name: "container_memory_working_set_bytes", typ: gauge, container: fromUsage(memoryWorkingSet),
		help: "Current working set in bytes: usage minus inactive file pages (what kubelet evicts by)."},
	{name: "container_memory_rss", typ: gauge, container: fromUsage(memoryRSS),
		help: "Anonymous memory (RSS) in bytes."},
	{name: "container_memory_cache", typ: gauge, container: fromUsage(memoryCache),
		help: "Page cache memory in bytes."},
	{name: "container_memory_mapped_file", typ: gauge, container: fromUsage(memoryMappedFile),
		help: "Memory-mapped file pages in bytes."},
	{name: "container_memory_swap", typ: gauge, container: fromUsage(memorySwap),
		help: "Swap in use by the container, in bytes (0 without swap accounting)."},
	{name: "container_memory_kernel_usage", typ: gauge, container: fromUsage(memoryKernel),
		help: "Kernel memory charged to the container (stacks, slab, page tables, socket buffers), in bytes."},
	{name: "container_memory_max_usage_bytes", typ: gauge, container: fromUsage(memoryMaxUsage),
		help: "Peak memory usage in bytes (cgroup v2: memory.peak, 0 on kernels before 5.19)."},
	{name: "container_memory_failcnt", typ: counter, container: fromUsage(memoryFailcnt),
		help: "Number of times memory usage hit the limit."},
	{name: "container_memory_failures_total", typ: counter, labels: failureLabels, container: fromUsage(memoryFailures),
		help: "Cumulative page faults (failure_type pgfault, pgmajfault) of the container's cgroup alone (scope container) and with its descendants (scope hierarchy)."},
	{name: "container_oom_events_total", typ: counter, container: oomEvents,
		help: "Number of processes of the container killed by the kernel's OOM killer (at least 1 once the container was OOMKilled)."},

	// Huge pages, pressure (metrics_cgroup.go): only where the host has them.
	{name: "container_hugetlb_usage_bytes", typ: gauge, labels: pageSizeLabels, container: fromUsage(hugetlbUsage),
		help: "Current huge page usage in bytes, per page size (where the hugetlb controller is enabled)."},
	{name: "container_hugetlb_max_usage_bytes", typ: gauge, labels: pageSizeLabels, container: fromUsage(hugetlbMaxUsage),
		help: "Peak huge page usage in bytes, per page size (cgroup v1 only: v2 keeps no peak)."},
	{name: "container_pressure_cpu_waiting_seconds_total", typ: counter, container: fromUsage(cpuWaiting),
		help: "Total time some of the container's tasks waited for a CPU (PSI some)." + wholeSeconds},
	{name: "container_pressure_cpu_stalled_seconds_total", typ: counter, container: fromUsage(cpuStalled),
		help: "Total time none of the container's tasks could run for want of CPU (PSI full)." + wholeSeconds},
	{name: "container_pressure_memory_waiting_seconds_total", typ: counter, container: fromUsage(memoryWaiting),
		help: "Total time some of the container's tasks waited for memory (PSI some)." + wholeSeconds},
	{name: "container_pressure_memory_stalled_seconds_total", typ: counter, container: fromUsage(memoryStalled),
		help: "Total time all of the container's tasks stalled waiting for memory (PSI full)." + wholeSeconds},
	{name: "container_pressure_io_waiting_seconds_total", typ: counter, container: fromUsage(ioWaiting),
		help: "Total time some of the container's tasks waited for I/O (PSI some)." + wholeSeconds},
	{name: "container_pressure_io_stalled_seconds_total", typ: counter, container: fromUsage(ioStalled),
		help: "Total time all of the container's tasks stalled waiting for I/O (PSI full)." + wholeSeconds},

	// Processes (metrics_process.go).
	{name: "container_processes", typ: gauge, container: fromProcesses(processCount),
		help: "Number of processes in the container's cgroup."},
	{name: "container_threads", typ: gauge, container: fromUsage(threads),
		help: "Number of threads (tasks) in the container's cgroup."},
	{name: "container_threads_max", typ: gauge, container: fromUsage(threadsMax),
		help: "Maximum number of threads (pids.max) of the container's cgroup; 0 for no limit."},
	{name: "container_file_descriptors", typ: gauge, container: fromProcesses(fileDescriptors),
		help: "Number of open file descriptors of the container's processes (of the first 1024 processes)."},
	{name: "container_sockets", typ: gauge, container: fromProcesses(sockets),
		help: "Number of open sockets of the container's processes (of the first 16384 descriptors)."},
	{name: "container_ulimits_soft", typ: gauge, labels: ulimitLabels, container: fromProcesses(ulimitsSoft),
		help: "Soft ulimit of the container's init process (ulimit max_open_files); 0 for unlimited."},

	// Configuration and times (metrics_process.go).
	{name: "container_spec_cpu_period", typ: gauge, container: specCPUPeriod,
		help: "Configured CPU CFS period of the container, in µs; 0 when not set (the kernel's 100000 applies)."},
	{name: "container_spec_cpu_quota", typ: gauge, container: specCPUQuota,
		help: "Configured CPU CFS quota of the container, in µs per period (only when one is set)."},
	{name: "container_spec_cpu_shares", typ: gauge, container: specCPUShares,
		help: "Configured CPU shares of the container; 0 when not set."},
	{name: "container_spec_memory_limit_bytes", typ: gauge, container: specMemoryLimit,
		help: "Configured memory limit of the container in bytes; 0 for unlimited."},
	{name: "container_spec_memory_swap_limit_bytes", typ: gauge, container: specMemorySwapLimit,
		help: "Configured memory plus swap limit of the container in bytes; 0 for unlimited."},
	{name: "container_spec_memory_reservation_limit_bytes", typ: gauge, container: specMemoryReservation,
		help: "Configured memory reservation (unified memory.min) of the container in bytes; 0 for none."},
	{name: "container_start_time_seconds", typ: gauge, container: startTime,
		help: "Creation time of the container, in Unix seconds."},
	{name: "container_last_seen", typ: gauge, container: lastSeen,
		help: "When berth last sampled the container, in Unix seconds."},

	// Filesystem and block I/O (metrics_fs.go).
	{name: "container_fs_usage_bytes", typ: gauge, labels: deviceLabels, container: fsUsage,
		help: "Bytes allocated by the container's writable layer."},
	{name: "container_fs_limit_bytes", typ: gauge, labels: deviceLabels, container: fromLayerFS(fsLimit),
		help: "Size in bytes of the filesystem holding the container's writable layer."},
	{name: "container_fs_inodes_total", typ: gauge, labels: deviceLabels, container: fromLayerFS(fsInodesTotal),
		help: "Number of inodes of the filesystem holding the container's writable layer."},
	{name: "container_fs_inodes_free", typ: gauge, labels: deviceLabels, container: fromLayerFS(fsInodesFree),
		help: "Number of free inodes of the filesystem holding the container's writable layer."},
	{name: "container_fs_reads_bytes_total", typ: counter, labels: deviceLabels, container: fromUsage(fsReadBytes),
		help: "Cumulative bytes read by the container, per block device (blkio/io accounting)."},
	{name: "container_fs_reads_total", typ: counter, labels: deviceLabels, container: fromUsage(fsReads),
		help: "Cumulative reads completed by the container, per block device (blkio/io accounting)."},
	{name: "container_fs_writes_bytes_total", typ: counter, labels: deviceLabels, container: fromUsage(fsWriteBytes),
		help: "Cumulative bytes written by the container, per block device (blkio/io accounting)."},
	{name: "container_fs_writes_total", typ: counter, labels: deviceLabels, container: fromUsage(fsWrites),
		help: "Cumulative writes completed by the container, per block device (blkio/io accounting)."},
	{name: "container_blkio_device_usage_total", typ: counter, labels: blkioLabels, container: fromUsage(blkioDeviceUsage),
		help: "Cumulative bytes transferred by the container, per block device and operation (Read, Write)."},

	// Network, per pod interface but lo (metrics_network.go).
	{name: "container_network_receive_bytes_total", typ: counter, labels: networkLabels, pod: network(rxBytes),
		help: "Cumulative bytes received by a pod interface."},
	{name: "container_network_receive_packets_total", typ: counter, labels: networkLabels, pod: network(rxPackets),
		help: "Cumulative packets received by a pod interface."},
	{name: "container_network_receive_packets_dropped_total", typ: counter, labels: networkLabels, pod: network(rxDropped),
		help: "Cumulative packets dropped while receiving on a pod interface."},
	{name: "container_network_receive_errors_total", typ: counter, labels: networkLabels, pod: network(rxErrors),
		help: "Cumulative errors while receiving on a pod interface."},
	{name: "container_network_transmit_bytes_total", typ: counter, labels: networkLabels, pod: network(txBytes),
		help: "Cumulative bytes transmitted by a pod interface."},
	{name: "container_network_transmit_packets_total", typ: counter, labels: networkLabels, pod: network(txPackets),
		help: "Cumulative packets transmitted by a pod interface."},
	{name: "container_network_transmit_packets_dropped_total", typ: counter, labels: networkLabels, pod: network(txDropped),
		help: "Cumulative packets dropped while transmitting on a pod interface."},
	{name: "container_network_transmit_errors_total", typ: counter, labels: networkLabels, pod: network(txErrors),
		help: "Cumulative errors while transmitting on a pod interface."},
}

// metricDescriptors describes metricTable, in its order.
var metricDescriptors = describe(metricTable)

func describe(table []metricDef) []*runtimeapi.MetricDescriptor {
	out := make([]*runtimeapi.MetricDescriptor, 0, len(table))
	for i := range table {
		d := &table[i]
		keys := append(append([]string{}, commonLabelKeys...), d.labels...)
		out = append(out, &runtimeapi.MetricDescriptor{Name: d.name, Help: d.help, LabelKeys: keys})
	}
	return out
}
