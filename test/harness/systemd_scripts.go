package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The shell scripts of PrivateSystemd. Paths and names come from this
// host's mount table and the test's temp dir; they are single-quoted.

// outerScript joins systemd's cgroup root, then makes the namespaces whose
// PID 1 runs inner.
func outerScript(procs []string, inner string) string {
	return fmt.Sprintf(`#!/bin/sh
set -e
for f in %s; do echo $$ > "$f"; done
exec unshare --pid --fork --mount --cgroup --uts --mount-proc %s
`, quoteAll(procs), quote(inner))
}

// innerScript is PID 1 of the new namespaces: a private /run with an empty
// target to boot into, the cgroup hierarchies remounted from the cgroup
// namespace's root, then systemd.
func innerScript(hs []hierarchy) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mkdir -p /run/systemd/system /run/lock
printf '[Unit]\nDescription=berth test target\nDefaultDependencies=no\n' > /run/systemd/system/berth-test.target
mount -t tmpfs -o mode=755,nosuid,nodev,noexec tmpfs /sys/fs/cgroup
`)
	for _, h := range hs {
		dir := quote(filepath.Join("/sys/fs/cgroup", h.name))
		if h.v2 {
			fmt.Fprintf(&b, "mkdir %s && mount -t cgroup2 cgroup2 %s\n", dir, dir)
			continue
		}
		opts := h.options
		if !hasController(opts) {
			opts = append([]string{"none"}, opts...)
		}
		fmt.Fprintf(&b, "mkdir %s && mount -t cgroup -o %s cgroup %s\n", dir, quote(strings.Join(opts, ",")), dir)
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries { // cpu -> cpu,cpuacct and the like
		if target, err := os.Readlink(filepath.Join("/sys/fs/cgroup", e.Name())); err == nil {
			fmt.Fprintf(&b, "ln -s %s %s\n", quote(target), quote(filepath.Join("/sys/fs/cgroup", e.Name())))
		}
	}
	fmt.Fprintf(&b, `export container=berth-test
exec %s --system --unit=berth-test.target --log-target=console --show-status=no
`, SystemdBinary)
	return b.String()
}

// enterScript runs "$@" as a child of nsenter in systemd's namespaces and
// cgroup root, passes SIGTERM and SIGINT on to it (nsenter, which forks to
// enter a PID namespace, does not) and exits with its status.
func enterScript(procs []string, pid int) string {
	return fmt.Sprintf(`#!/bin/sh
for f in %s; do echo $$ > "$f" || exit 1; done
nsenter --target %d --mount --pid --cgroup --uts -- "$@" &
child=$!
trap 'pkill -TERM -P $child' TERM
trap 'pkill -INT -P $child' INT
while :; do
	wait $child
	rc=$?
	kill -0 $child 2>/dev/null || exit $rc
done
`, quoteAll(procs), pid)
}

// hasController reports whether v1 mount options name a controller (and
// not only name=...).
func hasController(opts []string) bool {
	for _, o := range opts {
		if !strings.HasPrefix(o, "name=") && o != "none" && o != "xattr" && o != "noprefix" && o != "clone_children" {
			return true
		}
	}
	return false
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, " ")
}
