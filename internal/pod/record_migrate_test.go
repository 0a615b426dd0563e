package pod

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// v1Container is a container record as berth wrote it with CRI v0.34:
// env values as plain strings, signal names without SIGNAL_.
const v1Container = `{
  "version": 1,
  "id": "ID",
  "sandboxId": "SANDBOX",
  "name": "app_web_default_uid_0",
  "state": "running",
  "config": {"metadata": {"name": "app"}, "image": {"image": "busybox"},
    "envs": [{"key": "GREETING", "value": "hello world"}, {"key": "B64", "value": "abcd"}, {"key": "EMPTY"}],
    "stopSignal": "SIGUSR1"}
}`

func TestVersion1ContainerRecordIsMigrated(t *testing.T) {
	id, sandbox := strings.Repeat("a", 64), strings.Repeat("b", 64)
	path := filepath.Join(t.TempDir(), "container.json")
	data := strings.NewReplacer("ID", id, "SANDBOX", sandbox).Replace(v1Container)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	var rec Container
	if err := readContainerRecord(path, id, &rec); err != nil {
		t.Fatalf("version 1 record: %v", err)
	}
	envs := map[string]string{}
	for _, kv := range rec.Config.GetEnvs() {
		envs[kv.GetKey()] = string(kv.GetValue())
	}
	// "abcd" is valid base64: decoded as it is, it would turn into 3 bytes.
	if envs["GREETING"] != "hello world" || envs["B64"] != "abcd" || envs["EMPTY"] != "" || len(envs) != 3 {
		t.Errorf("envs %q", envs)
	}
	if rec.Config.GetStopSignal() != runtimeapi.Signal_SIGNAL_SIGUSR1 {
		t.Errorf("stop signal %v, want SIGNAL_SIGUSR1", rec.Config.GetStopSignal())
	}
	raw, err := encodeConfig(rec.Config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte("hello world"))) {
		t.Errorf("re-encoded config %s: want the value in base64, as version 2 stores it", raw)
	}
}
