package main

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForwardedPorts(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "side", Ports: []v1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}}},
		Containers:     []v1.Container{{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 80}, {ContainerPort: 443}}}},
	}}
	for _, tc := range []struct {
		args        []string
		want        string
		wantRemotes []int32
		wantErr     string
	}{
		{args: []string{"8080:80"}, want: "8080:80", wantRemotes: []int32{80}},
		{args: []string{"80"}, want: "80:80", wantRemotes: []int32{80}},
		{args: []string{":80"}, want: "0:80", wantRemotes: []int32{80}},
		{args: []string{"0:80"}, want: "0:80", wantRemotes: []int32{80}},
		{args: []string{"http"}, want: "80:80", wantRemotes: []int32{80}},
		{args: []string{"9000:metrics", "8443:443"}, want: "9000:9090 8443:443", wantRemotes: []int32{9090, 443}},
		{args: []string{"8080:0"}, wantErr: "from 1 to 65535"},
		{args: []string{"8080:nope"}, wantErr: `"nope": neither a number`},
		{args: []string{"70000:80"}, wantErr: `local port "70000"`},
		{args: []string{"a:80"}, wantErr: `local port "a"`},
		{args: []string{"1:2:3"}, wantErr: `"2:3"`},
		{args: []string{"65536"}, wantErr: "neither a number"},
	} {
		ports, remotes, err := forwardedPorts(pod, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("forwardedPorts(%v): %v, %v; want an error saying %q", tc.args, ports, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(ports, " ") != tc.want || !slices.Equal(remotes, tc.wantRemotes) {
			t.Errorf("forwardedPorts(%v) = %v, %v, %v; want %s, %v", tc.args, ports, remotes, err, tc.want, tc.wantRemotes)
		}
	}
}
