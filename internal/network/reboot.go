package network

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrBeforeBoot marks a teardown that failed for a pod set up before the
// host's last boot. The reboot took the kernel state its plugins failed to
// delete (links, iptables chains: an older bridge plugin's DEL fails on
// its own missing chain), so Teardown forgot the pod's cached attachments
// and the caller may take the network as released, saying so.
var ErrBeforeBoot = errors.New("the pod's network was set up before the host's last boot, whose reboot took its kernel state; its cached attachments are forgotten")

// bootTime is when the host booted; a variable for tests.
var bootTime = readBootTime

// readBootTime reads when the host booted (btime of /proc/stat), or the
// zero time when it cannot: then no pod counts as set up before it.
func readBootTime() time.Time {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(secs, 0)
			}
		}
	}
	return time.Time{}
}

// setUpBeforeBoot reports whether a pod set up at t was set up before the
// host's last boot.
func setUpBeforeBoot(t time.Time) bool {
	boot := bootTime()
	return !t.IsZero() && !boot.IsZero() && t.Before(boot)
}

// forgetCached removes libcni's cached results of pod id, so that nothing
// tries their DEL again.
func (c *CNI) forgetCached(id string) error {
	cached, err := c.lib.GetCachedAttachments(id)
	if err != nil {
		return fmt.Errorf("pod %s: network cache: %w", id, err)
	}
	var errs []error
	for _, att := range cached {
		// libcni's layout: <cache>/results/<network>-<container id>-<ifname>.
		path := filepath.Join(c.cfg.CacheDir, "results", att.Network+"-"+att.ContainerID+"-"+att.IfName)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("pod %s: network cache: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
