package agent

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/crilog"
)

// Limits of a termination message, the kubelet's: the file is read up to
// 4 KiB; the fallback to the log takes its last 80 lines, up to 2 KiB.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	maxFallbackMessage    = 2048
)

// terminationMessage is what an exited container left in its termination
// message file, else (policy FallbackToLogsOnError, non-zero exit) the
// tail of its log, as the kubelet reads it.
func (deps *syncDeps) terminationMessage(uid string, meta podspec.ContainerMeta, exitCode int32, logPath string) string {
	path := filepath.Join(deps.podDir(uid), "containers", meta.Name, strconv.Itoa(meta.RestartCount))
	if msg := readHead(path, maxTerminationMessage); msg != "" {
		return msg
	}
	if meta.TerminationMessagePolicy != v1.TerminationMessageFallbackToLogsOnError || exitCode == 0 || logPath == "" {
		return ""
	}
	if !filepath.IsAbs(logPath) {
		logPath = filepath.Join(podspec.PodLogDirectory(deps.podLogDir, meta.Namespace, meta.PodRef.Name, uid), logPath)
	}
	// Beneath the log root, no symlink followed: the log's directory is
	// writable by whatever container has it mounted.
	f, err := logrotate.OpenLog(deps.podLogDir, logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	return logTail(f, fallbackLogLines, maxFallbackMessage)
}

// readHead reads up to limit bytes of a file; "" when it cannot.
func readHead(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(data)
}

// logTail is the content of the last lines of a CRI log, at most limit
// bytes (the end kept).
func logTail(f *os.File, lines int, limit int) string {
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	// Enough of the end of the file for the lines wanted, with CRI's
	// per-record overhead.
	const window = 64 << 10
	if info.Size() > window {
		if _, err := f.Seek(info.Size()-window, io.SeekStart); err != nil {
			return ""
		}
	}
	data, _ := io.ReadAll(f)
	if info.Size() > window {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	records, _ := crilog.ReadRecords(bytes.NewReader(data))
	all := mergedLines(records)
	var out []byte
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	for _, l := range all {
		out = append(out, l...)
		out = append(out, '\n')
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return string(out)
}

// mergedLines joins the records of both streams into lines, in file order.
func mergedLines(records []crilog.Record) []string {
	var lines []string
	partial := map[crilog.Stream][]byte{}
	for _, r := range records {
		partial[r.Stream] = append(partial[r.Stream], r.Content...)
		if !r.Partial {
			lines = append(lines, string(partial[r.Stream]))
			partial[r.Stream] = nil
		}
	}
	return lines
}
