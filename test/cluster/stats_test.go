package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// summary is the part of kubelet's /stats/summary the test reads.
type summary struct {
	Node struct {
		CPU    usage `json:"cpu"`
		Memory usage `json:"memory"`
	} `json:"node"`
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		CPU        usage `json:"cpu"`
		Memory     usage `json:"memory"`
		Containers []struct {
			Name   string `json:"name"`
			CPU    usage  `json:"cpu"`
			Memory usage  `json:"memory"`
			Logs   usage  `json:"logs"`
			Rootfs usage  `json:"rootfs"`
		} `json:"containers"`
	} `json:"pods"`
}

type usage struct {
	UsageCoreNanoSeconds uint64 `json:"usageCoreNanoSeconds"`
	WorkingSetBytes      uint64 `json:"workingSetBytes"`
	UsedBytes            uint64 `json:"usedBytes"`
}

// testStats reads kubelet's summary API and resource metrics from
// kubelet's server as metrics-server does, with a client certificate that
// kubelet authorizes through the API server (the API server's node proxy
// refuses loopback addresses, and the node is on loopback); then restarts
// kubelet with PodAndContainerStatsFromCRI, which takes every pod and
// container figure from berth's CRI stats: the running pod is adopted,
// not restarted, and the stats hold again.
func (c *cluster) testStats(t *testing.T) {
	c.waitStats(t, "stats of pod talk in kubelet's summary")
	metrics, err := c.kubeletGet("/metrics/resource")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `container_cpu_usage_seconds_total{container="ticker",namespace="default",pod="talk"}`) {
		t.Errorf("/metrics/resource has no CPU usage of ticker:\n%s", metrics)
	}
	sandbox := c.readySandboxes(map[string]string{"io.kubernetes.pod.name": "talk"})
	before := c.restarts(t, "talk", "ticker")
	c.kubelet.Terminate()
	c.kubelet.FeatureGates = append(c.kubelet.FeatureGates, "PodAndContainerStatsFromCRI=true")
	c.kubelet.Start(c.berth.Socket)
	c.waitStats(t, "stats of pod talk from CRI")
	after := c.readySandboxes(map[string]string{"io.kubernetes.pod.name": "talk"})
	if len(sandbox) != 1 || len(after) != 1 || after[0].GetId() != sandbox[0].GetId() {
		t.Errorf("kubelet's restart changed talk's sandboxes: %d then %d", len(sandbox), len(after))
	}
	if n := c.restarts(t, "talk", "ticker"); n != before {
		t.Errorf("kubelet's restart restarted ticker: %s restarts, was %s", n, before)
	}
}

// waitStats waits until kubelet's summary has every figure of pod talk;
// on timeout it says what is missing and shows the summary.
func (c *cluster) waitStats(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		raw, lack := c.statsComplete(t)
		if lack == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after 2m the summary lacks %s:\n%s", what, lack, raw)
		}
		time.Sleep(time.Second)
	}
}

// statsComplete says what kubelet's summary lacks of pod talk and its
// running containers, "" when nothing.
func (c *cluster) statsComplete(t *testing.T) (string, string) {
	raw, err := c.kubeletGet("/stats/summary")
	if err != nil {
		return "", err.Error()
	}
	var s summary
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, raw)
	}
	if s.Node.Memory.WorkingSetBytes == 0 {
		return raw, "node memory"
	}
	for _, pod := range s.Pods {
		if pod.PodRef.Name != "talk" || pod.PodRef.Namespace != "default" {
			continue
		}
		if pod.CPU.UsageCoreNanoSeconds == 0 || pod.Memory.WorkingSetBytes == 0 {
			return raw, "pod cpu or memory"
		}
		seen := 0
		for _, ctr := range pod.Containers {
			if ctr.Name != "ticker" && ctr.Name != "web" && ctr.Name != "shell" {
				continue
			}
			seen++
			if ctr.CPU.UsageCoreNanoSeconds == 0 || ctr.Memory.WorkingSetBytes == 0 {
				return raw, "container " + ctr.Name + " cpu or memory"
			}
			if ctr.Name == "web" && ctr.Rootfs.UsedBytes == 0 { // it wrote /www
				return raw, "web's writable layer"
			}
			if ctr.Name == "ticker" && ctr.Logs.UsedBytes == 0 {
				return raw, "ticker's logs"
			}
		}
		if seen == 3 {
			return raw, ""
		}
		return raw, "containers"
	}
	return raw, "pod talk"
}

// kubeletGet reads a path of kubelet's server as the cluster's admin.
func (c *cluster) kubeletGet(path string) (string, error) {
	resp, err := c.cp.AdminClient().Get(fmt.Sprintf("https://127.0.0.1:%d%s", c.kubelet.Port, path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET kubelet %s: %s: %s", path, resp.Status, b)
	}
	return string(b), err
}
