package cgroupstats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// readPressures reads the three *.pressure files of a unified-hierarchy
// cgroup directory; a missing or unreadable file leaves its pressure nil.
func readPressures(dir string, s *Sample) {
	s.CPUPressure = readPressure(filepath.Join(dir, "cpu.pressure"))
	s.MemoryPressure = readPressure(filepath.Join(dir, "memory.pressure"))
	s.IOPressure = readPressure(filepath.Join(dir, "io.pressure"))
}

// readPressure parses "some avg10=.. avg60=.. avg300=.. total=.." and the
// "full" line (cpu.pressure of kernels before 5.13 has none: zero).
func readPressure(path string) *Pressure {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var p Pressure
	found := false
	for line := range strings.Lines(string(data)) {
		kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		var d *PressureData
		switch kind {
		case "some":
			d, found = &p.Some, true
		case "full":
			d = &p.Full
		default:
			continue
		}
		for field := range strings.FieldsSeq(rest) {
			key, val, _ := strings.Cut(field, "=")
			switch key {
			case "total":
				d.TotalMicros, _ = strconv.ParseUint(val, 10, 64)
			case "avg10":
				d.Avg10, _ = strconv.ParseFloat(val, 64)
			case "avg60":
				d.Avg60, _ = strconv.ParseFloat(val, 64)
			case "avg300":
				d.Avg300, _ = strconv.ParseFloat(val, 64)
			}
		}
	}
	if !found {
		return nil
	}
	return &p
}

// readHugetlb reads the hugetlb accounts of a cgroup directory, one per
// page size whose usage file is there: hugetlb.<size>.usage_in_bytes and
// .max_usage_in_bytes on v1, hugetlb.<size>.current on v2 (which keeps no
// peak). The sizes are the directory's own, so a host without huge pages,
// or a cgroup without the controller, gives none.
func readHugetlb(dir string, unified bool) []HugetlbUsage {
	suffix := ".usage_in_bytes"
	if unified {
		suffix = ".current"
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "hugetlb.*"+suffix))
	sort.Strings(matches)
	var out []HugetlbUsage
	for _, m := range matches {
		size := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "hugetlb."), suffix)
		if strings.Contains(size, ".") { // hugetlb.2MB.rsvd.current and the like
			continue
		}
		usage, err := readUintFile(m)
		if err != nil {
			continue
		}
		h := HugetlbUsage{PageSize: size, Usage: usage}
		if !unified {
			h.MaxUsage, err = readUintFile(filepath.Join(dir, "hugetlb."+size+".max_usage_in_bytes"))
			h.HasMaxUsage = err == nil
		}
		out = append(out, h)
	}
	return out
}

// readUintFile reads a one-number cgroup file; "max" is 0 (no limit).
func readUintFile(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(data))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readKV reads a flat keyed file ("key value" lines, as memory.stat);
// nil when it cannot be read.
func readKV(path string) map[string]uint64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64); err == nil {
			out[key] = n
		}
	}
	return out
}

// DeviceName names a block device as cAdvisor labels it: /dev/ and the
// DEVNAME of /sys/dev/block/<major>:<minor>/uevent, or "major:minor" when
// sysfs does not know the device (a filesystem with no block device).
func DeviceName(major, minor uint64) string {
	return deviceName("/sys", major, minor)
}

func deviceName(sysRoot string, major, minor uint64) string {
	id := fmt.Sprintf("%d:%d", major, minor)
	data, err := os.ReadFile(filepath.Join(sysRoot, "dev", "block", id, "uevent"))
	if err != nil {
		return id
	}
	for line := range strings.Lines(string(data)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "DEVNAME="); ok && name != "" {
			return "/dev/" + name
		}
	}
	return id
}
