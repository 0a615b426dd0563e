package critest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCritestBenchmark runs `critest -benchmark` (pod, container and image
// lifecycles, serial) against berth and writes a Markdown table of each
// operation's latency to BERTH_CRITEST_BENCHMARK. It is a report, never an
// assertion: `make bench` runs it.
func TestCritestBenchmark(t *testing.T) {
	critest, out := os.Getenv("BERTH_CRITEST"), os.Getenv("BERTH_CRITEST_BENCHMARK")
	if critest == "" || out == "" {
		t.Skip("BERTH_CRITEST and BERTH_CRITEST_BENCHMARK are not set (`make bench` sets them)")
	}
	d := setUp(t)
	dir := t.TempDir()
	params := filepath.Join(dir, "params.yaml")
	busybox := e2eRepo + "busybox:1.29-2"
	listed := []string{criToolsRepo + "test-image-1:latest", criToolsRepo + "test-image-2:latest", criToolsRepo + "test-image-3:latest"}
	yaml := fmt.Sprintf("containersNumber: 50\ncontainersNumberParallel: 1\npodsNumber: 50\npodsNumberParallel: 1\n"+
		"imagesNumber: 20\nimagesNumberParallel: 1\nimagePullingBenchmarkImage: %s\nimageListingBenchmarkImages: [%s]\n",
		busybox, strings.Join(listed, ", "))
	if err := os.WriteFile(params, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(d.endpointArgs(), "-benchmark", "-benchmarking-params-file", params, "-benchmarking-output-dir", dir)
	runErr := runCritest(t, critest, args)
	d.stop(t)
	if runErr != nil {
		t.Fatalf("critest -benchmark: %v\n%s", runErr, d.logTail(40))
	}
	report, err := benchmarkReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", out, report)
	d.assertClean(t)
}

// lifecycleResults is the JSON critest writes per benchmark.
type lifecycleResults struct {
	OperationsNames []string `json:"operationsNames"`
	NumParallel     int      `json:"numParallel"`
	Datapoints      []struct {
		OperationsDurationsNs []int64 `json:"operationsDurationsNs"`
	} `json:"datapoints"`
}

// benchmarkReport renders every *_benchmark_data.json in dir: per
// operation, the number of samples, p50, p95 and max.
func benchmarkReport(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_benchmark_data.json"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no benchmark data in %s: %v", dir, err)
	}
	slices.Sort(files)
	var b strings.Builder
	b.WriteString("| benchmark | operation | samples | p50 | p95 | max |\n|---|---|---:|---:|---:|---:|\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var res lifecycleResults
		if err := json.Unmarshal(data, &res); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), "_benchmark_data.json")
		for i, op := range res.OperationsNames {
			var samples []time.Duration
			for _, dp := range res.Datapoints {
				if i < len(dp.OperationsDurationsNs) {
					samples = append(samples, time.Duration(dp.OperationsDurationsNs[i]))
				}
			}
			if len(samples) == 0 {
				continue
			}
			slices.Sort(samples)
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", name, op, len(samples),
				ms(percentile(samples, 50)), ms(percentile(samples, 95)), ms(samples[len(samples)-1]))
		}
	}
	return b.String(), nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
