package oci

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func destinations(mounts []specs.Mount) []string {
	var out []string
	for _, m := range mounts {
		out = append(out, m.Destination)
	}
	return out
}

func findMount(mounts []specs.Mount, dest string) *specs.Mount {
	for i := range mounts {
		if mounts[i].Destination == dest {
			return &mounts[i]
		}
	}
	return nil
}

func TestContainerMountsOrderAndOverrides(t *testing.T) {
	in := testInput(t)
	in.Config.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data/cache", HostPath: "/srv/cache"},
		{ContainerPath: "/etc/hosts", HostPath: "/srv/hosts", Readonly: true},
		{ContainerPath: "/data", HostPath: "/srv/data"},
		{ContainerPath: "/dev/shm/", HostPath: "/srv/shm"},
	}
	mounts, propagation, err := containerMounts(in, containerNamespaceOptions(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys", "/sys/fs/cgroup",
		"/data", "/etc/hostname", "/etc/resolv.conf", "/data/cache", "/etc/hosts", "/dev/shm"}
	if got := destinations(mounts); !reflect.DeepEqual(got, want) {
		t.Fatalf("destinations = %q\nwant %q", got, want)
	}
	if m := findMount(mounts, "/etc/hosts"); m.Source != "/srv/hosts" || !reflect.DeepEqual(m.Options, []string{"rbind", "rprivate", "ro"}) {
		t.Errorf("/etc/hosts = %+v, want the request's read-only bind", m)
	}
	if m := findMount(mounts, "/sys"); m.Options[len(m.Options)-1] != "ro" {
		t.Errorf("/sys options %v, want ro", m.Options)
	}
	if propagation != "" {
		t.Errorf("rootfs propagation %q, want default", propagation)
	}
}

func TestContainerMountsPropagation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modes  []runtimeapi.MountPropagation
		option []string
		rootfs string
	}{
		{"private", []runtimeapi.MountPropagation{runtimeapi.MountPropagation_PROPAGATION_PRIVATE}, []string{"rprivate"}, ""},
		{"host to container", []runtimeapi.MountPropagation{runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}, []string{"rslave"}, "rslave"},
		{"bidirectional", []runtimeapi.MountPropagation{runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}, []string{"rshared"}, "rshared"},
		{"bidirectional wins", []runtimeapi.MountPropagation{runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL,
			runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}, []string{"rshared", "rslave"}, "rshared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requested []*runtimeapi.Mount
			for i, mode := range tc.modes {
				requested = append(requested, &runtimeapi.Mount{ContainerPath: "/m" + string(rune('a'+i)), HostPath: "/h", Propagation: mode})
			}
			mounts, rootfs, err := requestedMounts(Sandbox{}, requested, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range mounts {
				if want := []string{"rbind", tc.option[i], "rw"}; !reflect.DeepEqual(m.Options, want) || m.Type != "bind" {
					t.Errorf("mount %d = %+v, want bind %v", i, m, want)
				}
			}
			if rootfs != tc.rootfs {
				t.Errorf("rootfs propagation %q, want %q", rootfs, tc.rootfs)
			}
		})
	}
}

func TestContainerMountsShmAndDev(t *testing.T) {
	t.Run("pod shm", func(t *testing.T) {
		in := testInput(t)
		in.Sandbox.ShmPath = "/run/berth/pods/sb1/shm"
		mounts, _, _ := containerMounts(in, containerNamespaceOptions(in))
		if m := findMount(mounts, "/dev/shm"); m.Type != "bind" || m.Source != in.Sandbox.ShmPath {
			t.Fatalf("/dev/shm = %+v, want bind of the pod's shm", m)
		}
	})
	t.Run("host ipc uses host shm", func(t *testing.T) {
		in := testInput(t)
		in.Sandbox.ShmPath = "/run/berth/pods/sb1/shm"
		opts := &runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_NODE}
		mounts, _, _ := containerMounts(in, opts)
		if m := findMount(mounts, "/dev/shm"); m.Type != "bind" || m.Source != "/dev/shm" {
			t.Fatalf("/dev/shm = %+v, want bind of the host's", m)
		}
	})
	t.Run("private shm", func(t *testing.T) {
		in := testInput(t)
		mounts, _, _ := containerMounts(in, containerNamespaceOptions(in))
		if m := findMount(mounts, "/dev/shm"); m.Type != "tmpfs" {
			t.Fatalf("/dev/shm = %+v, want tmpfs", m)
		}
	})
	t.Run("request /dev drops the /dev set", func(t *testing.T) {
		in := testInput(t)
		in.Config.Mounts = []*runtimeapi.Mount{{ContainerPath: "/dev", HostPath: "/dev"}}
		mounts, _, _ := containerMounts(in, containerNamespaceOptions(in))
		want := []string{"/proc", "/sys", "/sys/fs/cgroup", "/dev", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}
		if got := destinations(mounts); !reflect.DeepEqual(got, want) {
			t.Fatalf("destinations = %q, want %q", got, want)
		}
	})
	t.Run("readonly rootfs makes pod files read-only, privileged makes sys rw", func(t *testing.T) {
		in := testInput(t)
		securityContext(in).ReadonlyRootfs = true
		securityContext(in).Privileged = true
		mounts, _, _ := containerMounts(in, containerNamespaceOptions(in))
		if m := findMount(mounts, "/etc/resolv.conf"); m.Options[2] != "ro" {
			t.Errorf("/etc/resolv.conf options %v, want ro", m.Options)
		}
		for _, d := range []string{"/sys", "/sys/fs/cgroup"} {
			if m := findMount(mounts, d); m.Options[len(m.Options)-1] != "rw" {
				t.Errorf("%s options %v, want rw", d, m.Options)
			}
		}
	})
}

func TestRecursiveReadOnlyMount(t *testing.T) {
	mounts, _, err := requestedMounts(Sandbox{}, []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/h", Readonly: true, RecursiveReadOnly: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mounts[0].Options; got[len(got)-1] != "rro" {
		t.Errorf("options %v, want rro last", got)
	}
}

func TestMountOptionsOnlyTakeRightsAway(t *testing.T) {
	mounts, _, err := requestedMounts(Sandbox{}, []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/h", MountOptions: []string{"noexec", "nosuid", "nodev"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(mounts[0].Options, ","); got != "rbind,rprivate,rw,noexec,nosuid,nodev" {
		t.Errorf("options %s", got)
	}
}

func TestRequestedMountErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     *runtimeapi.Mount
		class error
	}{
		{"relative container path", &runtimeapi.Mount{ContainerPath: "data", HostPath: "/h"}, errdefs.ErrInvalidArgument},
		{"over the rootfs", &runtimeapi.Mount{ContainerPath: "/", HostPath: "/h"}, errdefs.ErrInvalidArgument},
		{"relative host path", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "h"}, errdefs.ErrInvalidArgument},
		{"unknown propagation", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", Propagation: 9}, errdefs.ErrInvalidArgument},
		{"image volume not mounted", &runtimeapi.Mount{ContainerPath: "/d", Image: &runtimeapi.ImageSpec{Image: "x"}}, errdefs.ErrFailedPrecondition},
		{"image volume without image", &runtimeapi.Mount{ContainerPath: "/d", Image: &runtimeapi.ImageSpec{}}, errdefs.ErrInvalidArgument},
		{"image volume over the rootfs", &runtimeapi.Mount{ContainerPath: "/", Image: &runtimeapi.ImageSpec{Image: "x"}}, errdefs.ErrInvalidArgument},
		{"recursive read-only, not read-only", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", RecursiveReadOnly: true}, errdefs.ErrInvalidArgument},
		{"recursive read-only, host to container", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", Readonly: true, RecursiveReadOnly: true,
			Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}, errdefs.ErrInvalidArgument},
		{"recursive read-only, bidirectional", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", Readonly: true, RecursiveReadOnly: true,
			Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}, errdefs.ErrInvalidArgument},
		{"mount option that grants", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", MountOptions: []string{"nosuid", "suid"}}, errdefs.ErrInvalidArgument},
		{"mount option rw over ro", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", Readonly: true, MountOptions: []string{"rw"}}, errdefs.ErrInvalidArgument},
		{"id mapped outside a user namespace", &runtimeapi.Mount{ContainerPath: "/d", HostPath: "/h", UidMappings: []*runtimeapi.IDMapping{{Length: 1}}}, errdefs.ErrInvalidArgument},
	} {
		if _, _, err := requestedMounts(Sandbox{}, []*runtimeapi.Mount{tc.m}, nil); !errors.Is(err, tc.class) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.class)
		}
	}
}

// TestImageVolumeMounts: an image volume binds what the caller mounted of
// the image, read-only, nosuid and nodev even when the request asks for
// read-write, and needs no host path.
func TestImageVolumeMounts(t *testing.T) {
	requested := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/srv/data"},
		{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}},
		{ContainerPath: "/rro", Image: &runtimeapi.ImageSpec{Image: "x"}, Readonly: true, RecursiveReadOnly: true, MountOptions: []string{"noexec"}},
	}
	sources := map[int]string{1: "/var/lib/berth/containers/c1/imagevolumes/1", 2: "/var/lib/berth/containers/c1/imagevolumes/2/sub"}
	mounts, _, err := requestedMounts(Sandbox{}, requested, sources)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ source, options string }{
		{"/srv/data", "rbind,rprivate,rw"},
		{sources[1], "rbind,rprivate,ro,nosuid,nodev"},
		{sources[2], "rbind,rprivate,rro,nosuid,nodev,noexec"},
	} {
		if m := mounts[i]; m.Source != want.source || m.Type != "bind" || strings.Join(m.Options, ",") != want.options {
			t.Errorf("mount %d = %+v; want a bind of %s with %s", i, m, want.source, want.options)
		}
	}
	if _, _, err := requestedMounts(Sandbox{}, requested, map[int]string{1: sources[1]}); !errors.Is(err, errdefs.ErrFailedPrecondition) ||
		!strings.Contains(err.Error(), `mounts[2] "/rro"`) {
		t.Errorf("image volume the caller did not mount: %v; want FailedPrecondition naming mounts[2]", err)
	}
}
