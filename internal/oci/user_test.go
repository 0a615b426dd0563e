package oci

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func i64(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }

func TestResolveUser(t *testing.T) {
	root := accountsRootfs(t)
	for _, tc := range []struct {
		name      string
		sc        *runtimeapi.LinuxContainerSecurityContext
		imageUser string
		want      specs.User
	}{
		{"no user is root with its groups", nil, "", specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
		{"image uid known", nil, "1000", specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{1001, 10, 29}}},
		{"image uid unknown", nil, "4242", specs.User{UID: 4242, GID: 0, AdditionalGids: []uint32{0}}},
		{"image uid:gid", nil, "4242:7", specs.User{UID: 4242, GID: 7, AdditionalGids: []uint32{7}}},
		{"image name", nil, "app", specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{1001, 10, 29}}},
		{"image name:group", nil, "app:staff", specs.User{UID: 1000, GID: 50, AdditionalGids: []uint32{50, 10, 29}}},
		{"image name:gid", nil, "daemon:99", specs.User{UID: 1, GID: 99, AdditionalGids: []uint32{99, 29}}},
		{"image uid:group", nil, "4242:wheel", specs.User{UID: 4242, GID: 10, AdditionalGids: []uint32{10}}},
		{"run_as_user beats image", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1)}, "app",
			specs.User{UID: 1, GID: 1, AdditionalGids: []uint32{1, 29}}},
		{"run_as_user 0 is root", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(0)}, "app",
			specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
		{"run_as_user + run_as_group", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(5)}, "",
			specs.User{UID: 1000, GID: 5, AdditionalGids: []uint32{5, 10, 29}}},
		{"run_as_username", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app"}, "0",
			specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{1001, 10, 29}}},
		{"run_as_username + run_as_group", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app", RunAsGroup: i64(0)}, "",
			specs.User{UID: 1000, GID: 0, AdditionalGids: []uint32{0, 10, 29}}},
		{"run_as_group overrides the username's group", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app:staff", RunAsGroup: i64(7)}, "",
			specs.User{UID: 1000, GID: 7, AdditionalGids: []uint32{7, 10, 29}}},
		{"supplemental groups merge", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1000), SupplementalGroups: []int64{500, 10}},
			"", specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{1001, 10, 29, 500}}},
		{"supplemental groups strict", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1000), SupplementalGroups: []int64{500},
			SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict},
			"", specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{1001, 500}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveUser(root, tc.sc, tc.imageUser)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("resolveUser = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolveUserErrors(t *testing.T) {
	root := accountsRootfs(t)
	for _, tc := range []struct {
		name      string
		sc        *runtimeapi.LinuxContainerSecurityContext
		imageUser string
		class     error
		mention   []string
	}{
		{"unknown image user name", nil, "nobody", errdefs.ErrNotFound, []string{`"nobody"`, "/etc/passwd"}},
		{"unknown image group name", nil, "app:nosuch", errdefs.ErrNotFound, []string{`"nosuch"`, "/etc/group"}},
		{"unknown run_as_username", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "ghost"}, "",
			errdefs.ErrNotFound, []string{`"ghost"`, "/etc/passwd", "run_as_username"}},
		{"both user and username", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1), RunAsUsername: "app"}, "",
			errdefs.ErrInvalidArgument, []string{"run_as_user and run_as_username"}},
		{"group without user", &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: i64(1)}, "app",
			errdefs.ErrInvalidArgument, []string{"run_as_group"}},
		{"negative uid", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(-1)}, "", errdefs.ErrInvalidArgument, []string{"-1"}},
		{"uid too large", nil, "4294967295", errdefs.ErrInvalidArgument, []string{"4294967295"}},
		{"negative supplemental group", &runtimeapi.LinuxContainerSecurityContext{SupplementalGroups: []int64{-5}}, "",
			errdefs.ErrInvalidArgument, []string{"supplemental_groups"}},
		{"three fields", nil, "a:b:c", errdefs.ErrInvalidArgument, []string{`"a:b:c"`}},
		{"empty group part", nil, "app:", errdefs.ErrInvalidArgument, []string{`"app:"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveUser(root, tc.sc, tc.imageUser)
			if !errors.Is(err, tc.class) {
				t.Fatalf("err = %v, want class %v", err, tc.class)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err %q does not mention %s", err, m)
				}
			}
		})
	}
}

func TestResolveUserMissingFiles(t *testing.T) {
	root := newRootfs(t, nil) // scratch image: no /etc at all
	got, err := resolveUser(root, nil, "65534:65534")
	if err != nil || got.UID != 65534 || got.GID != 65534 {
		t.Fatalf("numeric user without /etc/passwd = %+v, %v", got, err)
	}
	_, err = resolveUser(root, nil, "app")
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "file missing") {
		t.Fatalf("named user without /etc/passwd: err = %v", err)
	}
}

func TestResolveUserSymlinksStayInRootfs(t *testing.T) {
	outside := t.TempDir()
	hostPasswd := filepath.Join(outside, "passwd")
	if err := os.WriteFile(hostPasswd, []byte("escapee:x:4321:4321::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("absolute symlink to a host file", func(t *testing.T) {
		root := newRootfs(t, map[string]string{"etc/group": testGroup})
		if err := os.Symlink(hostPasswd, filepath.Join(root, "etc/passwd")); err != nil {
			t.Fatal(err)
		}
		if _, err := resolveUser(root, nil, "escapee"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("err = %v, want NotFound (host file must not be read)", err)
		}
	})
	t.Run("relative symlink climbing out", func(t *testing.T) {
		root := newRootfs(t, map[string]string{"etc/group": testGroup})
		rel, err := filepath.Rel(filepath.Join(root, "etc"), hostPasswd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, filepath.Join(root, "etc/passwd")); err != nil {
			t.Fatal(err)
		}
		if _, err := resolveUser(root, nil, "escapee"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("err = %v, want NotFound (host file must not be read)", err)
		}
	})
	t.Run("symlinked /etc directory resolved inside the rootfs", func(t *testing.T) {
		root := newRootfs(t, map[string]string{"real/etc/passwd": testPasswd})
		if err := os.Symlink("/real/etc", filepath.Join(root, "etc")); err != nil {
			t.Fatal(err)
		}
		got, err := resolveUser(root, nil, "app")
		if err != nil || got.UID != 1000 {
			t.Fatalf("resolveUser via in-rootfs symlink = %+v, %v", got, err)
		}
	})
	t.Run("symlink loop", func(t *testing.T) {
		root := newRootfs(t, map[string]string{"etc/group": testGroup})
		if err := os.Symlink("/etc/passwd", filepath.Join(root, "etc/passwd")); err != nil {
			t.Fatal(err)
		}
		if _, err := resolveUser(root, nil, "app"); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("err = %v, want InvalidArgument", err)
		}
	})
	t.Run("passwd is a fifo", func(t *testing.T) {
		root := newRootfs(t, map[string]string{"etc/group": testGroup})
		if err := mkfifo(filepath.Join(root, "etc/passwd")); err != nil {
			t.Skip("mkfifo:", err)
		}
		if _, err := resolveUser(root, nil, "app"); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("err = %v, want InvalidArgument", err)
		}
	})
}
