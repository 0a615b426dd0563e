package registry

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// config renders the registry's config.yml. The access log (Apache combined
// format, one line per request once it completes) goes to stdout, which
// launch appends to LogPath.
func (r *Registry) config() string {
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	var b strings.Builder
	fmt.Fprintf(&b, `version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: %s
`, r.storageDir(), r.Host, hex.EncodeToString(secret))
	if r.opts.TLS {
		fmt.Fprintf(&b, "  tls:\n    certificate: %s\n    key: %s\n",
			filepath.Join(r.Dir, "server.crt"), filepath.Join(r.Dir, "server.key"))
	}
	if r.opts.Username != "" {
		fmt.Fprintf(&b, "auth:\n  htpasswd:\n    realm: berth-test\n    path: %s\n", r.htpasswdPath())
	}
	return b.String()
}

// blobGet matches an access log line of a blob GET:
// 127.0.0.1 - - [date] "GET /v2/<repo>/blobs/sha256:<hex> HTTP/1.1" 200 1234 "" "agent"
var blobGet = regexp.MustCompile(`"GET /v2/(\S+)/blobs/(sha256:[0-9a-f]{64}) HTTP/[0-9.]+" (\d{3}) `)

// BlobGet is one GET of a blob in the registry's access log.
type BlobGet struct {
	Repo, Digest string
	Status       int
}

// BlobGetLog returns every blob GET the access log shows so far, in order.
// A request appears once it has completed.
func (r *Registry) BlobGetLog() ([]BlobGet, error) {
	f, err := os.Open(r.LogPath)
	if err != nil {
		return nil, fmt.Errorf("registry log: %w", err)
	}
	defer f.Close()
	var out []BlobGet
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := blobGet.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		status, _ := strconv.Atoi(m[3])
		out = append(out, BlobGet{Repo: m[1], Digest: m[2], Status: status})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("registry log: %w", err)
	}
	return out, nil
}

// BlobGets counts the successful (2xx) GETs of each blob digest so far.
func (r *Registry) BlobGets() (map[string]int, error) {
	log, err := r.BlobGetLog()
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, g := range log {
		if g.Status >= 200 && g.Status < 300 {
			counts[g.Digest]++
		}
	}
	return counts, nil
}

// LogTail returns the last n lines of the registry's log, for test failures.
func (r *Registry) LogTail(n int) string {
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		return "(no registry log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- " + r.LogPath + " (last lines) ---\n" + strings.Join(lines, "\n")
}

// procWchar reads the wchar field of /proc/<pid>/io.
func procWchar(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("registry io counters: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("registry io counters: /proc/%d/io has no wchar", pid)
}
