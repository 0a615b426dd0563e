package oci

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const testPasswd = `root:x:0:0:root:/root:/bin/sh
# a comment

daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
app:x:1000:1001:app:/home/app:/bin/sh
broken line
nogroup:x:2000:2000::/:/bin/false
`

const testGroup = `root:x:0:
daemon:x:1:
wheel:x:10:root,app
appgrp:x:1001:
audio:x:29:app , daemon
staff:x:50:
`

// newRootfs makes a rootfs directory holding files (path → content).
func newRootfs(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func accountsRootfs(t *testing.T) string {
	return newRootfs(t, map[string]string{"etc/passwd": testPasswd, "etc/group": testGroup})
}

func testSandbox() Sandbox {
	return Sandbox{
		ID: "sb1",
		Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
			Hostname: "web-host",
			Linux:    &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/podx"},
		},
		NetNS: "/run/berth/pods/sb1/ns/net", IPCNS: "/run/berth/pods/sb1/ns/ipc", UTSNS: "/run/berth/pods/sb1/ns/uts",
		HostnamePath: "/run/berth/pods/sb1/hostname", HostsPath: "/run/berth/pods/sb1/hosts",
		ResolvConfPath: "/run/berth/pods/sb1/resolv.conf",
	}
}

func testInput(t *testing.T) Input {
	t.Helper()
	in := Input{
		ContainerID: "ctr1",
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: "sha256:abc"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			}},
		},
		Sandbox:        testSandbox(),
		RootfsPath:     accountsRootfs(t),
		OOMScoreAdjMin: -999,
	}
	in.Image.Name = "example.test/app:1"
	in.Image.Config.Cmd = []string{"/bin/app"}
	return in
}

func securityContext(in Input) *runtimeapi.LinuxContainerSecurityContext {
	return in.Config.Linux.SecurityContext
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
