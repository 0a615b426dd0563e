package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// measureBundleFloors times the pinned runc, the one berth runs, on
// berth's own bundle: a container berth prepared (CreateContainer makes no
// runc container; its bundle holds berth's config.json and the mounted
// rootfs) is run under the floors' runc root n times after one discarded
// warm-up, by `runc create` + `runc start`, then by `runc run --detach`,
// each stopped untimed before the next. The pod and container are removed
// through CRI at the end.
func (e *env) measureBundleFloors(ctx context.Context, c criClient, n int, f *floors) (err error) {
	cfg, err := e.podConfig("floor-bundle", runtimeapi.NamespaceMode_CONTAINER)
	if err != nil {
		return err
	}
	podID, _, err := c.runPod(ctx, cfg)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	defer func() {
		if rerr := c.removePod(context.WithoutCancel(ctx), podID); rerr != nil && err == nil {
			err = fmt.Errorf("floor: %w", rerr)
		}
	}()
	ctrID, _, err := c.createContainer(ctx, podID, cfg)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	bundle := filepath.Join(e.state, "bundles", ctrID)
	bin := e.pinnedRunc()
	for i := 0; i <= n; i++ {
		t, err := e.runcCreateStart(ctx, bin, bundle, fmt.Sprintf("bb%s-bcs-%d", e.id, i))
		if err != nil {
			return err
		}
		if i > 0 {
			f.bundleCreStart = append(f.bundleCreStart, t[0]+t[1])
		}
	}
	for i := 0; i <= n; i++ {
		took, err := e.bundleRun(ctx, bin, bundle, fmt.Sprintf("bb%s-brun-%d", e.id, i))
		if err != nil {
			return err
		}
		if i > 0 {
			f.bundleRun = append(f.bundleRun, took)
		}
	}
	return nil
}

// bundleRun times `runc run --detach` of bundle, then stops the container
// untimed.
func (e *env) bundleRun(ctx context.Context, bin, bundle, id string) (time.Duration, error) {
	took, err := e.runcWith(ctx, bin, "run", "--detach", "--bundle", bundle, id)
	if err != nil {
		_, _ = e.runcWith(context.WithoutCancel(ctx), bin, "delete", "--force", id)
		return 0, fmt.Errorf("floor: %w", err)
	}
	if _, err := e.runcStopNow(ctx, bin, id); err != nil {
		return 0, err
	}
	return took, nil
}
