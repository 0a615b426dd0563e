package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCorruptImageRecordIsSetAside: a truncated record of one image does
// not stop the store. After a restart over it, the running pod is
// untouched, the other image still resolves and runs new containers,
// Status lists the bad record, and a pull or import (a writer) moves it
// aside instead of failing.
func TestCorruptImageRecordIsSetAside(t *testing.T) {
	d := startDaemon(t)
	d.importImage(stopLayout)
	podCfg := podConfig(t, "img-quarantine")
	podID := d.runPod(podCfg)
	running := d.run(podID, podCfg, containerConfig("before", "sleep", "1000"))
	pid := d.containerPid(running)
	st, err := d.Img.ImageStatus(d.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}})
	if err != nil || st.GetImage() == nil {
		t.Fatalf("ImageStatus %s: %v %v", stopImage, st, err)
	}
	id := strings.TrimPrefix(st.GetImage().GetId(), "sha256:")
	record := filepath.Join(d.Root, "images", "index", id+".json")
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}

	d.Kill9()
	if err := os.WriteFile(record, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	d.Start()

	if got := d.containerPid(running); got != pid {
		t.Errorf("running container after restart: pid %d, want %d", got, pid)
	}
	if got := quarantinedInStatus(t, d); !slices.Equal(got, []string{"image/" + id}) {
		t.Errorf("Status quarantinedRecords %v, want [image/%s]", got, id)
	}
	list, err := d.Img.ListImages(d.ctx(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatalf("ListImages with a corrupt record: %v", err)
	}
	if len(list.GetImages()) != 1 {
		t.Errorf("ListImages: %d images, want the good one only", len(list.GetImages()))
	}
	after := d.run(podID, podCfg, containerConfig("after", "sleep", "1000"))
	if d.containerStatus(after).GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Error("no new container from the good image")
	}
	// A writer sets the record aside, and the image can be imported again.
	d.importImage(stopLayout)
	if _, err := os.Stat(record); err != nil {
		t.Errorf("re-imported image has no record: %v", err)
	}
	quarantined, _ := filepath.Glob(filepath.Join(d.Root, "images", "quarantine", "*"))
	if len(quarantined) == 0 {
		t.Error("the corrupt record was not kept in quarantine/")
	}
	d.stopAndRemovePod(podID)
}
