package main

import (
	"strings"
	"testing"
)

// berth cp reads kubectl cp's file specs: [NS/]POD:PATH on one side, a
// local path on the other.
func TestParseCpArgs(t *testing.T) {
	for _, tc := range []struct {
		src, dst string
		want     fileSpec // the side in the pod
		wantErr  string
	}{
		{src: "web:/etc/hostname", dst: "/tmp/x", want: fileSpec{namespace: "default", pod: "web", path: "/etc/hostname"}},
		{src: "./local", dst: "kube-system/dns:data", want: fileSpec{namespace: "kube-system", pod: "dns", path: "data"}},
		{src: "/tmp/a:b", dst: "web:/x", want: fileSpec{namespace: "default", pod: "web", path: "/x"}},
		{src: "web:/a", dst: "db:/b", wantErr: "one of src or dest must be a local"},
		{src: "a", dst: "b", wantErr: "one of src or dest must be a remote"},
		{src: ":/a", dst: "b", wantErr: "want [NAMESPACE/]POD:PATH"},
		{src: "a/b/c:/a", dst: "b", wantErr: "want [NAMESPACE/]POD:PATH"},
		{src: "web:", dst: "b", wantErr: "the path in the container is empty"},
	} {
		s, d, err := parseCpArgs(tc.src, tc.dst, "default")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("cp %s %s: err = %v; want %q", tc.src, tc.dst, err, tc.wantErr)
			}
			continue
		}
		remote, local := s, d
		if d.pod != "" {
			remote, local = d, s
		}
		if err != nil || remote != tc.want || local.pod != "" {
			t.Errorf("cp %s %s: %+v %+v %v; want the pod side %+v", tc.src, tc.dst, s, d, err, tc.want)
		}
	}
}

// The pid comes from the verbose info, as containerd and berth put it.
func TestPidOfInfo(t *testing.T) {
	if pid, err := pidOfInfo(map[string]string{"info": `{"sandboxID":"x","pid":4242,"runtimeSpec":{}}`}); err != nil || pid != 4242 {
		t.Errorf("pid = %d, %v; want 4242", pid, err)
	}
	for _, info := range []map[string]string{nil, {"info": "{"}, {"info": `{"pid":0}`}} {
		if _, err := pidOfInfo(info); err == nil {
			t.Errorf("info %v: want an error", info)
		}
	}
}

// A relative path in the container starts at its workingDir.
func TestContainerRootResolve(t *testing.T) {
	c := containerRoot{workDir: "/srv"}
	if got := c.resolve("data/x"); got != "/srv/data/x" {
		t.Errorf("resolve = %q", got)
	}
	if got := (containerRoot{}).resolve("x"); got != "/x" {
		t.Errorf("resolve without workingDir = %q", got)
	}
}
