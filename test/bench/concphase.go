package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// concPhase is one runtime's N pods with K in flight: the client-side
// wall time of each call, the meters of the starts and of the teardown,
// and the memory readings.
type concPhase struct {
	k, n                 int
	starts, teardown     meter
	run, createStart     []time.Duration
	podStart             []time.Duration // RunPodSandbox through StartContainer's return
	stop, remove         []time.Duration
	memEarly, memAllUp   podMemory // memEarlyPods up (phases with K=1 only), every pod up
	failed               string    // why the phase did not complete; its figures are not shown
	mu                   sync.Mutex
	startedPods, removed int
}

// runPhase runs one warm-up pod cycle (discarded), then starts n pods with
// k in flight and tears them down with k in flight. With k = 1 the starts
// pause after memEarlyPods pods for a memory reading (outside the
// meters); every phase reads memory once all its pods are up.
func (row *concRuntime) runPhase(ctx context.Context, k, n int) (*concPhase, error) {
	ph := &concPhase{k: k, n: n}
	ph.starts.count, ph.teardown.count = row.client.fsyncs, row.client.fsyncs
	if _, err := row.client.cycle(ctx, fmt.Sprintf("cw-%s-%d", row.tag, k), runtimeapi.NamespaceMode_CONTAINER); err != nil {
		return ph, fmt.Errorf("warm-up pod: %w", err)
	}
	ids := make([]string, n)
	err := row.startAll(ctx, ph, ids)
	ph.teardown.start()
	terr := inFlight(0, n, k, false, func(i int) error { return row.tearDownOne(ctx, ph, ids[i]) })
	ph.teardown.stop()
	return ph, errors.Join(err, terr, ph.starts.err, ph.teardown.err)
}

// startAll starts the phase's pods (ids[i] is pod i's sandbox id once it
// runs) in one batch, or two around the early memory reading.
func (row *concRuntime) startAll(ctx context.Context, ph *concPhase, ids []string) error {
	batches := []int{ph.n}
	if ph.k == 1 && ph.n > memEarlyPods {
		batches = []int{memEarlyPods, ph.n}
	}
	from := 0
	for _, to := range batches {
		ph.starts.start()
		err := inFlight(from, to, ph.k, true, func(i int) error { return row.startOne(ctx, ph, ids, i) })
		ph.starts.stop()
		if err != nil {
			return err
		}
		time.Sleep(settle)
		mem, err := readPodMemory(row.procs, row.daemonPid(), to)
		if err != nil {
			return fmt.Errorf("memory with %d pods up: %w", to, err)
		}
		if to == ph.n {
			ph.memAllUp = mem
		} else {
			ph.memEarly = mem
		}
		from = to
	}
	return nil
}

// startOne runs pod i's sandbox and its sleep container, and records the
// calls' times.
func (row *concRuntime) startOne(ctx context.Context, ph *concPhase, ids []string, i int) error {
	cfg, err := row.client.e.podConfig(fmt.Sprintf("c-%s-%d-%d", row.tag, ph.k, i), runtimeapi.NamespaceMode_CONTAINER)
	if err != nil {
		return err
	}
	t0 := time.Now()
	podID, run, err := row.client.runPod(ctx, cfg)
	if err != nil {
		return err
	}
	ids[i] = podID
	ctrID, create, err := row.client.createContainer(ctx, podID, cfg)
	if err != nil {
		return err
	}
	start, err := row.client.startContainer(ctx, ctrID)
	if err != nil {
		return err
	}
	whole := time.Since(t0)
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.run, ph.createStart = append(ph.run, run), append(ph.createStart, create+start)
	ph.podStart, ph.startedPods = append(ph.podStart, whole), ph.startedPods+1
	return nil
}

// tearDownOne stops and removes one pod ("" is a pod that never ran) and
// records both calls' times.
func (row *concRuntime) tearDownOne(ctx context.Context, ph *concPhase, podID string) error {
	if podID == "" {
		return nil
	}
	stop, err := row.client.stopPod(ctx, podID)
	if err != nil {
		return err
	}
	remove, err := row.client.removePodTimed(ctx, podID)
	if err != nil {
		return err
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.stop, ph.remove, ph.removed = append(ph.stop, stop), append(ph.remove, remove), ph.removed+1
	return nil
}

// inFlight calls work(i) for every i in [from, to), at most k calls at a
// time, and returns their errors joined. With stopOnError no call starts
// after one has failed.
func inFlight(from, to, k int, stopOnError bool, work func(i int) error) error {
	var (
		mu   sync.Mutex
		next = from
		errs []error
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= to || (stopOnError && len(errs) > 0) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range max(0, min(k, to-from)) {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				if err := work(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
