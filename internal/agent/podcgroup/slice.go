package podcgroup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/opencontainers/cgroups"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// ensureSlice starts the pod's slice as a transient unit with the pod's
// limits (systemd writes the cgroup files itself) and reports whether it
// made it; a slice that exists already is left as it is, as kubelet's
// EnsureExists leaves an existing pod cgroup.
func ensureSlice(ctx context.Context, slice string, cfg podspec.PodCgroupConfig) (bool, error) {
	parent, ok := parentSlice(slice)
	if !ok {
		return false, fmt.Errorf("not a nested slice name")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		return false, fmt.Errorf("systemd: %w", err)
	}
	defer conn.Close()
	props := append([]sddbus.Property{
		sddbus.PropDescription("berth pod slice " + slice),
		sddbus.PropWants(parent),
		{Name: "DefaultDependencies", Value: godbus.MakeVariant(false)},
	}, sliceProperties(cfg, cgroups.IsCgroup2UnifiedMode())...)
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, slice, "replace", props, done); err != nil {
		var dbusErr godbus.Error
		if errors.As(err, &dbusErr) && strings.HasSuffix(dbusErr.Name, ".UnitExists") {
			return false, nil
		}
		return false, fmt.Errorf("start: %w", err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return false, fmt.Errorf("start: %s", result)
		}
		return true, nil
	case <-ctx.Done():
		return false, fmt.Errorf("start: %w", ctx.Err())
	}
}

// sliceProperties are the pod's limits as systemd unit properties: the
// CPU weight (cgroup v2, kubelet's mapping of the shares) or shares (v1),
// the CPU quota per second, the memory limit (MemoryMax on v2,
// MemoryLimit on v1), accounting on.
func sliceProperties(cfg podspec.PodCgroupConfig, unified bool) []sddbus.Property {
	prop := func(name string, v any) sddbus.Property {
		return sddbus.Property{Name: name, Value: godbus.MakeVariant(v)}
	}
	props := []sddbus.Property{prop("MemoryAccounting", true), prop("CPUAccounting", true), prop("TasksAccounting", true)}
	if unified {
		props = append(props, prop("CPUWeight", podspec.CPUWeight(cfg.CPUShares)))
	} else {
		props = append(props, prop("CPUShares", cfg.CPUShares))
	}
	if cfg.CPUQuota > 0 && cfg.CPUPeriod > 0 {
		props = append(props, prop("CPUQuotaPerSecUSec", quotaPerSecond(cfg.CPUQuota, cfg.CPUPeriod)))
	}
	if cfg.Memory > 0 {
		name := "MemoryLimit"
		if unified {
			name = "MemoryMax"
		}
		props = append(props, prop(name, uint64(cfg.Memory)))
	}
	return props
}

// quotaPerSecond is a CFS quota per period as systemd's
// CPUQuotaPerSecUSec, rounded up to the 10 ms systemd keeps (as runc
// rounds it).
func quotaPerSecond(quota int64, period uint64) uint64 {
	perSec := uint64(quota) * 1_000_000 / period
	if perSec%10_000 != 0 {
		perSec = (perSec/10_000 + 1) * 10_000
	}
	return perSec
}

// parentSlice is the slice a slice name sits in: berth-kubepods-pod1.slice
// sits in berth-kubepods.slice.
func parentSlice(slice string) (string, bool) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(name, "-")
	if i <= 0 {
		return "", false
	}
	return name[:i] + ".slice", true
}
