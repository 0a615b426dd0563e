package agentbench

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startCalls are the CRI calls that do the runtime's part of starting a
// pod: their server-side time is the runtime's share.
var startCalls = []string{"RunPodSandbox", "CreateContainer", "StartContainer", "PullImage", "ImageStatus"}

// scrapeCallTimes reads the summed server-side seconds per CRI method
// from berth's /metrics (berth_cri_request_duration_seconds_sum).
func scrapeCallTimes(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sums := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "berth_cri_request_duration_seconds_sum{") {
			continue
		}
		method := labelValue(line, "method")
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil && method != "" {
			sums[method] += v
		}
	}
	return sums
}

// labelValue returns a label's value on a metrics line.
func labelValue(line, label string) string {
	_, rest, ok := strings.Cut(line, label+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	if i := strings.LastIndex(value, "/"); i >= 0 {
		value = value[i+1:]
	}
	return value
}

func diffCalls(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for m, v := range after {
		if d := v - before[m]; d > 0 {
			out[m] = d
		}
	}
	return out
}

// runtimeShare sums the server-side time of the start calls.
func runtimeShare(calls map[string]float64) time.Duration {
	var s float64
	for _, m := range startCalls {
		s += calls[m]
	}
	return time.Duration(s * float64(time.Second))
}
