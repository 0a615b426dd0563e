package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// ArtifactsDir is where a failed test keeps its logs for later reading:
// BERTH_TEST_ARTIFACTS, else /tmp/berth-test-artifacts. Its temporary
// directories are gone by then.
func ArtifactsDir() string {
	if d := os.Getenv("BERTH_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "berth-test-artifacts")
}

// keptSuffixes are the files KeepOnFailure copies out of a directory:
// logs and reports, never the keys and configuration beside them.
var keptSuffixes = []string{".log", ".xml", ".txt"}

// maxKeptBytes bounds each kept file: its last bytes are the ones a failure
// is read from.
const maxKeptBytes = 64 << 20

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// KeepOnFailure registers a cleanup that, when t has failed, copies each
// path (a file, or the logs and reports in a directory tree) into a
// directory of its own under ArtifactsDir() and says where. Register it
// after the paths' temporary directories exist: cleanups run last first,
// so it then runs before they are removed.
func KeepOnFailure(t testing.TB, paths ...string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir := filepath.Join(ArtifactsDir(), unsafeName.ReplaceAllString(t.Name(), "_")+"-"+time.Now().Format("20060102-150405"))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Logf("keeping logs: %v", err)
			return
		}
		n := 0
		for _, p := range paths {
			n += keepTree(t, p, dir)
		}
		t.Logf("kept %d log files of the failed run in %s", n, dir)
	})
}

// keepTree copies the kept files under root (or root itself) into dir,
// each named after its path below root's parent; it returns how many.
func keepTree(t testing.TB, root, dir string) int {
	n := 0
	base := filepath.Dir(root)
	_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() || !kept(p) {
			return nil // keep what can be read, skip the rest
		}
		rel, _ := filepath.Rel(base, p)
		if err := copyTail(p, filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "_"))); err != nil {
			t.Logf("keeping %s: %v", p, err)
			return nil
		}
		n++
		return nil
	})
	return n
}

func kept(p string) bool {
	for _, s := range keptSuffixes {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// copyTail copies at most the last maxKeptBytes of src to dst (0600).
func copyTail(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err == nil && st.Size() > maxKeptBytes {
		if _, err := in.Seek(st.Size()-maxKeptBytes, io.SeekStart); err != nil {
			return err
		}
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// summary is what Summarize collected; Main prints it after the tests.
var summary struct {
	mu    sync.Mutex
	lines []string
}

// maxSummaryLines bounds the summary: it is the end of the output, the
// part a CI report shows.
const maxSummaryLines = 40

// Summarize records a line that Main prints again after every test has
// run, below all other output: what failed, in one line each, where the
// end of a long run's output is all one gets to see.
func Summarize(format string, args ...any) {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	summary.lines = append(summary.lines, fmt.Sprintf(format, args...))
}

// printSummary writes the collected lines, at most maxSummaryLines, to w.
func printSummary(w io.Writer, pkg string) {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	if len(summary.lines) == 0 {
		return
	}
	fmt.Fprintf(w, "=== %s: summary of failures (kept logs: %s) ===\n", pkg, ArtifactsDir())
	for i, l := range summary.lines {
		if i == maxSummaryLines {
			fmt.Fprintf(w, "... and %d more\n", len(summary.lines)-i)
			break
		}
		fmt.Fprintln(w, l)
	}
}
