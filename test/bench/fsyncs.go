package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// fsyncsMetric is the daemon's counter of its store's flushes.
const fsyncsMetric = "berth_store_fsyncs_total"

// storeFsyncs reads berth_store_fsyncs_total from the daemon's /metrics.
func (e *env) storeFsyncs() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: %s", resp.Status)
	}
	return parseCounter(bufio.NewScanner(resp.Body), fsyncsMetric)
}

// parseCounter finds the unlabelled sample of name in a text exposition.
func parseCounter(sc *bufio.Scanner, name string) (uint64, error) {
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("metrics: %s %q: %w", name, v, err)
		}
		return uint64(f), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, fmt.Errorf("metrics: no %s", name)
}
