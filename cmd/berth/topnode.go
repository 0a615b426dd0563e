package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func newTopNodeCommand(opts *globalOptions) *cobra.Command {
	var noHeaders bool
	cmd := &cobra.Command{
		Use:     "node",
		Aliases: []string{"nodes", "no"},
		Short:   "Show the CPU and memory use of this node, and of its image file system",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cri, err := dialRuntime(cmd, opts)
			if err != nil {
				return err
			}
			defer cri.Close()
			fs, err := cri.ImageService().ImageFsInfo(cmd.Context(), &runtimeapi.ImageFsInfoRequest{})
			if err != nil {
				return fmt.Errorf("top node: image fs info: %w", err)
			}
			u, err := sampleNode(cmd.Context())
			if err != nil {
				return err
			}
			u.imageFS = imageFSBytes(fs)
			if u.name, err = os.Hostname(); err != nil {
				return fmt.Errorf("top node: host name: %w", err)
			}
			return writeTopNode(cmd.OutOrStdout(), u, noHeaders)
		},
	}
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "print no header line")
	return cmd
}

// nodeUsage is the node's resource use and capacity.
type nodeUsage struct {
	name      string
	nanoCores uint64
	cpus      int
	memUsed   uint64 // MemTotal - MemAvailable
	memTotal  uint64
	imageFS   uint64 // bytes the runtime's image (and container) file systems use
}

// sampleNode reads /proc/stat twice, sampleGap apart, and /proc/meminfo.
func sampleNode(ctx context.Context) (nodeUsage, error) {
	first, err := readFile("/proc/stat", parseProcStat)
	if err != nil {
		return nodeUsage{}, err
	}
	select {
	case <-ctx.Done():
		return nodeUsage{}, ctx.Err()
	case <-time.After(sampleGap):
	}
	second, err := readFile("/proc/stat", parseProcStat)
	if err != nil {
		return nodeUsage{}, err
	}
	mem, err := readFile("/proc/meminfo", parseMeminfo)
	if err != nil {
		return nodeUsage{}, err
	}
	return nodeUsage{nanoCores: second.coresSince(first), cpus: second.cpus, memUsed: mem.used(), memTotal: mem.total}, nil
}

func readFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("top node: %w", err)
	}
	v, err := parse(bytes.NewReader(data))
	if err != nil {
		return v, fmt.Errorf("top node: %s: %w", path, err)
	}
	return v, nil
}

// procStat is the host's CPU time in clock ticks, from /proc/stat.
type procStat struct {
	total, idle uint64 // every state, and idle + iowait
	cpus        int    // cpuN lines
}

func parseProcStat(r io.Reader) (procStat, error) {
	var s procStat
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && fields[0] == "cpu":
			if len(fields) < 6 {
				return s, fmt.Errorf("cpu line: %d fields, want at least 5 values", len(fields))
			}
			for i, f := range fields[1:min(len(fields), 9)] { // user … steal; guest is in user already
				n, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return s, fmt.Errorf("cpu line: field %d: %w", i+1, err)
				}
				s.total += n
				if i == 3 || i == 4 { // idle, iowait
					s.idle += n
				}
			}
			found = true
		case len(fields) > 0 && strings.HasPrefix(fields[0], "cpu"):
			s.cpus++
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !found || s.cpus == 0 {
		return s, fmt.Errorf("no cpu lines")
	}
	return s, nil
}

// coresSince is the CPU use between two samples in nano cores: the busy
// share of the ticks times the number of CPUs.
func (s procStat) coresSince(prev procStat) uint64 {
	total := s.total - prev.total
	if s.total <= prev.total || s.idle < prev.idle {
		return 0
	}
	busy := total - min(total, s.idle-prev.idle)
	return uint64(float64(busy) / float64(total) * float64(s.cpus) * 1e9)
}

// meminfo is what /proc/meminfo says of memory, in bytes.
type meminfo struct{ total, available uint64 }

func (m meminfo) used() uint64 { return m.total - min(m.total, m.available) }

func parseMeminfo(r io.Reader) (meminfo, error) {
	var m meminfo
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || (fields[0] != "MemTotal:" && fields[0] != "MemAvailable:") {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s %w", fields[0], err)
		}
		if fields[0] == "MemTotal:" {
			m.total, haveTotal = kb*1024, true
		} else {
			m.available, haveAvail = kb*1024, true
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if !haveTotal || !haveAvail {
		return m, fmt.Errorf("no MemTotal or MemAvailable")
	}
	return m, nil
}

// imageFSBytes is what the runtime's image and container file systems
// use.
func imageFSBytes(fs *runtimeapi.ImageFsInfoResponse) uint64 {
	var n uint64
	for _, f := range append(fs.GetImageFilesystems(), fs.GetContainerFilesystems()...) {
		n += f.GetUsedBytes().GetValue()
	}
	return n
}

// writeTopNode prints kubectl top node's table, NAME CPU(cores) CPU(%)
// MEMORY(bytes) MEMORY(%), with the image file system's use after it.
func writeTopNode(w io.Writer, u nodeUsage, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, "NAME\tCPU(cores)\tCPU(%)\tMEMORY(bytes)\tMEMORY(%)\tIMAGE-FS(bytes)")
	}
	cpuPct, memPct := 0.0, 0.0
	if u.cpus > 0 {
		cpuPct = float64(u.nanoCores) / (float64(u.cpus) * 1e9) * 100
	}
	if u.memTotal > 0 {
		memPct = float64(u.memUsed) / float64(u.memTotal) * 100
	}
	fmt.Fprintf(tw, "%s\t%s\t%d%%\t%s\t%d%%\t%s\n", u.name, formatCPU(u.nanoCores), int(cpuPct), formatMemory(u.memUsed), int(memPct), formatMemory(u.imageFS))
	return tw.Flush()
}
