package integration

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// volumeImage is the image of the image volumes: busybox in two layers
// (an overlay of several lower dirs) and a top layer of data, a script
// and symlinks that lead out of the image.
var volumeImage = testimage.Options{
	Name: "berth.test/volume:v1", Layers: 2,
	ExtraFiles: map[string]string{
		"/data/hello.txt": "hello from the image\n", "/data/sub/inner.txt": "inner\n", "/data/run.sh": "#!/bin/sh\necho ran\n",
	},
	Symlinks: map[string]string{"/data/up": "../../..", "/data/abs": "/etc", "/data/in": "sub"},
}

// TestImageVolume drives CRI image volumes (Mount.image) as kubelet does:
// the image, or its image_sub_path, is mounted read-only, nosuid and nodev
// (its programs run, as critest v1.37 checks); a sub path that leads out of the image or does not exist is
// refused; the image cannot be removed while the container exists; after
// the container's removal no mount of it remains.
func TestImageVolume(t *testing.T) {
	d := startDaemon(t)
	layout := filepath.Join(t.TempDir(), "layout")
	if err := testimage.WriteLayout(layout, volumeImage); err != nil {
		t.Fatal(err)
	}
	d.importImage(layout)
	volID := d.imageStatus(volumeImage.Name).GetId()

	podCfg := podConfig(t, "imagevol")
	podID := d.runPod(podCfg)
	cfg := containerConfig("reader", "sleep", "1000")
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: volID}, Readonly: true}, // by id, as kubelet
		{ContainerPath: "/sub", Image: &runtimeapi.ImageSpec{Image: volumeImage.Name}, ImageSubPath: "data/in", Readonly: true},
		{ContainerPath: "/bb", Image: &runtimeapi.ImageSpec{Image: "busybox"}, Readonly: true}, // one layer
	}
	id := d.run(podID, podCfg, cfg)
	volumesDir := filepath.Join(d.Root, "containers", id, "imagevolumes")
	if mounts := harness.MountsUnder(volumesDir); len(mounts) != 3 {
		t.Errorf("mounts under %s: %v; want one per image volume", volumesDir, mounts)
	}
	checkImageVolumeAccess(t, d, id)
	if st := d.containerStatus(id); len(st.GetMounts()) != 3 || st.GetMounts()[0].GetImage().GetImage() != volID ||
		st.GetMounts()[1].GetImage().GetImageRef() != volID {
		t.Errorf("ContainerStatus mounts %v; want the image volumes as asked (kubelet's image gc reads their image ids), with their image_ref", st.GetMounts())
	}

	checkImageVolumeRefusals(t, d, podID, podCfg)
	if mounts := harness.MountsUnder(filepath.Join(d.Root, "containers")); len(mounts) != 3 {
		t.Errorf("mounts under the containers dir after refused creates: %v; want only the reader's 3", mounts)
	}

	_, err := d.Img.RemoveImage(d.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: volumeImage.Name}})
	if msg := wantCode(t, "RemoveImage of an image volume's image", err, codes.FailedPrecondition); !strings.Contains(msg, id) {
		t.Errorf("RemoveImage refusal %q; want the container named", msg)
	}
	if out, err := d.BerthCmd("rmi", volumeImage.Name).CombinedOutput(); err == nil || !strings.Contains(string(out), id) {
		t.Errorf("berth rmi of an image volume's image: %v %s; want it refused naming the container", err, out)
	}
	if !slices.Contains(d.imageIDs(), volID) {
		t.Fatalf("the image volume's image is gone while its container exists")
	}

	if _, err := d.RT.RemoveContainer(d.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mountinfo), id) {
		t.Errorf("a mount of the removed container %s is left:\n%s", id, mountinfo)
	}
	if _, err := os.Stat(volumesDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left after the removal: %v", volumesDir, err)
	}
	if _, err := d.Img.RemoveImage(d.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: volumeImage.Name}}); err != nil {
		t.Errorf("RemoveImage once its container is gone: %v", err)
	}
}

// checkImageVolumeAccess reads the image volumes from inside the
// container and runs their programs; writing there fails.
func checkImageVolumeAccess(t *testing.T, d *daemon, id string) {
	t.Helper()
	for _, tc := range []struct {
		cmd        string
		exit       int32
		out, inErr string
	}{
		{cmd: "cat /vol/data/hello.txt", out: "hello from the image\n"},
		{cmd: "cat /sub/inner.txt", out: "inner\n"},
		{cmd: "test -x /bb/bin/busybox && echo present", out: "present\n"},
		{cmd: "touch /vol/new", exit: 1, inErr: "Read-only file system"},
		{cmd: "mkdir /sub/new", exit: 1, inErr: "Read-only file system"},
		{cmd: "touch /bb/new", exit: 1, inErr: "Read-only file system"},
		{cmd: "/vol/data/run.sh", out: "ran\n"},
		{cmd: "/vol/bin/busybox echo ran", out: "ran\n"},
		{cmd: "/bb/bin/busybox echo ran", out: "ran\n"},
	} {
		resp, err := d.execSync(id, 10, "sh", "-c", tc.cmd)
		if err != nil {
			t.Errorf("%s: %v", tc.cmd, err)
			continue
		}
		if resp.GetExitCode() != tc.exit || (tc.out != "" && string(resp.GetStdout()) != tc.out) ||
			!strings.Contains(string(resp.GetStderr()), tc.inErr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				tc.cmd, resp.GetExitCode(), resp.GetStdout(), resp.GetStderr(), tc.exit, tc.out, tc.inErr)
		}
	}
	resp, err := d.execSync(id, 10, "awk", `$5 == "/vol" || $5 == "/sub" || $5 == "/bb" { print $5, $6 }`, "/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(string(resp.GetStdout()))
	if len(lines) != 3 {
		t.Fatalf("image volume mounts in the container: %q; want 3", lines)
	}
	for _, line := range lines {
		opts := strings.Split(strings.Fields(line)[1], ",")
		for _, want := range []string{"ro", "nosuid", "nodev"} {
			if !slices.Contains(opts, want) {
				t.Errorf("mount %s: options %v lack %s", line, opts, want)
			}
		}
		if slices.Contains(opts, "noexec") {
			t.Errorf("mount %s: noexec", line)
		}
	}
}

// checkImageVolumeRefusals: sub paths that lead out of the image, or are
// missing, and an image the store lacks refuse the create, naming the
// mount, the sub path or image.
func checkImageVolumeRefusals(t *testing.T, d *daemon, podID string, podCfg *runtimeapi.PodSandboxConfig) {
	t.Helper()
	for _, tc := range []struct {
		name, image, sub string
		code             codes.Code
		want             []string
		readWrite        bool
	}{
		{"symlink up", volumeImage.Name, "data/up", codes.InvalidArgument, []string{`"data/up"`, "out of the image"}, false},
		{"absolute symlink", volumeImage.Name, "data/abs/passwd", codes.InvalidArgument, []string{`"data/abs/passwd"`, "out of the image"}, false},
		{"dot dot", volumeImage.Name, "data/../../etc", codes.InvalidArgument, []string{`"data/../../etc"`, "'..'"}, false},
		{"missing", volumeImage.Name, "data/missing", codes.NotFound, []string{`"data/missing"`, "does not exist", "ImageVolumeMountFailed"}, false},
		{"absent image", "berth.test/absent:v1", "", codes.NotFound, []string{`mounts[0] "/x"`, `"berth.test/absent:v1"`}, false},
		{"read-write", volumeImage.Name, "", codes.InvalidArgument, []string{"mounts[0].readonly", "read-only"}, true},
	} {
		cfg := containerConfig("refused", "true")
		cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/x", Image: &runtimeapi.ImageSpec{Image: tc.image}, ImageSubPath: tc.sub, Readonly: !tc.readWrite}}
		_, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: podCfg})
		msg := wantCode(t, "CreateContainer with image volume "+tc.name, err, tc.code)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tc.name, msg, w)
			}
		}
	}
}

// TestImageVolumeRecovery: the daemon is killed with image volumes
// mounted: one container's create and another's removal were cut short
// (their records say creating and removing), and a third container's
// record is gone (its runc container deleted by hand). The restarted
// daemon unmounts their image volumes and removes them; the image can go
// then.
func TestImageVolumeRecovery(t *testing.T) {
	d := startDaemon(t)
	layout := filepath.Join(t.TempDir(), "layout")
	if err := testimage.WriteLayout(layout, volumeImage); err != nil {
		t.Fatal(err)
	}
	d.importImage(layout)
	podCfg := podConfig(t, "imagevol-crash")
	podID := d.runPod(podCfg)
	ids := map[string]string{}
	for _, name := range []string{"creating", "removing", "recordless"} {
		cfg := containerConfig(name, "sleep", "1000")
		cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: volumeImage.Name}, ImageSubPath: "data", Readonly: true}}
		ids[name] = d.run(podID, podCfg, cfg)
	}
	containers := filepath.Join(d.Root, "containers")
	if mounts := harness.MountsUnder(containers); len(mounts) != 3 {
		t.Fatalf("mounts under %s: %v; want 3 image volumes", containers, mounts)
	}
	d.Kill9()
	record := func(name string) string { return filepath.Join(containers, ids[name], "container.json") }
	for _, state := range []string{"creating", "removing"} {
		setRecordState(t, record(state), state)
	}
	if out, err := exec.Command(harness.Runc(), "--root", filepath.Join(d.State, "runc"), "delete", "--force", ids["recordless"]).CombinedOutput(); err != nil {
		t.Fatalf("runc delete behind the daemon's back: %v: %s", err, out)
	}
	if err := os.Remove(record("recordless")); err != nil {
		t.Fatal(err)
	}
	d.Start()
	if mounts := harness.MountsUnder(containers); len(mounts) != 0 {
		t.Errorf("mounts under %s after recovery: %v; want none", containers, mounts)
	}
	for name, id := range ids {
		if _, err := os.Stat(filepath.Join(containers, id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s container's dir after recovery: %v; want it removed", name, err)
		}
	}
	if _, err := d.Img.RemoveImage(d.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: volumeImage.Name}}); err != nil {
		t.Errorf("RemoveImage after recovery removed its containers: %v", err)
	}
}

// setRecordState rewrites the state of a container record, as a crash at
// that state would have left it.
func setRecordState(t *testing.T, path, state string) {
	t.Helper()
	var rec map[string]any
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		t.Fatal(err)
	}
	rec["state"] = state
	if data, err = json.Marshal(rec); err == nil {
		err = os.WriteFile(path, data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
