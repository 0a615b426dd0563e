package oci

import (
	"errors"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCommand(t *testing.T) {
	ep, cmd := []string{"/entry", "-x"}, []string{"serve", "--port=1"}
	for _, tc := range []struct {
		name                                string
		entrypoint, imageCmd, command, args []string
		want                                []string
	}{
		{"command and args replace everything", ep, cmd, []string{"/bin/sh"}, []string{"-c", "true"}, []string{"/bin/sh", "-c", "true"}},
		{"command alone drops image cmd", ep, cmd, []string{"/bin/sh"}, nil, []string{"/bin/sh"}},
		{"args alone keep entrypoint", ep, cmd, nil, []string{"run"}, []string{"/entry", "-x", "run"}},
		{"args alone without entrypoint", nil, cmd, nil, []string{"/bin/true"}, []string{"/bin/true"}},
		{"neither: entrypoint and cmd", ep, cmd, nil, nil, []string{"/entry", "-x", "serve", "--port=1"}},
		{"neither: cmd only", nil, cmd, nil, nil, []string{"serve", "--port=1"}},
		{"neither: entrypoint only", ep, nil, nil, nil, []string{"/entry", "-x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Command(tc.entrypoint, tc.imageCmd, tc.command, tc.args)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Command = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := Command(nil, nil, nil, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty command: err = %v, want InvalidArgument", err)
	}
	if _, err := Command([]string{}, []string{}, []string{}, []string{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty slices: err = %v, want InvalidArgument", err)
	}
}

func TestMergeEnv(t *testing.T) {
	kv := func(pairs ...string) []*runtimeapi.KeyValue {
		var out []*runtimeapi.KeyValue
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, &runtimeapi.KeyValue{Key: pairs[i], Value: []byte(pairs[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		image []string
		envs  []*runtimeapi.KeyValue
		want  []string
	}{
		{"image only", []string{"A=1", "B=2"}, nil, []string{"A=1", "B=2"}},
		{"request only", nil, kv("X", "1"), []string{"X=1"}},
		{"override in place", []string{"A=1", "B=2", "C=3"}, kv("B", "new"), []string{"A=1", "B=new", "C=3"}},
		{"new keys appended in order", []string{"A=1"}, kv("Z", "1", "Y", "2"), []string{"A=1", "Z=1", "Y=2"}},
		{"last duplicate wins", []string{"A=1"}, kv("A", "2", "A", "3"), []string{"A=3"}},
		{"value with equals", []string{"A=x=y"}, kv("B", "p=q"), []string{"A=x=y", "B=p=q"}},
		{"empty value kept", []string{"A=1"}, kv("A", ""), []string{"A="}},
		{"entry without equals overridable", []string{"FLAG", "B=2"}, kv("FLAG", "on"), []string{"FLAG=on", "B=2"}},
		{"empty key skipped", []string{"A=1"}, kv("", "x"), []string{"A=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MergeEnv(tc.image, tc.envs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("MergeEnv = %q, want %q", got, tc.want)
			}
		})
	}
}
