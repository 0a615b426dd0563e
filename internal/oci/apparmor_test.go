package oci

import (
	"errors"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestAppArmor(t *testing.T) {
	profile := func(kind runtimeapi.SecurityProfile_ProfileType, ref string) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Apparmor: &runtimeapi.SecurityProfile{ProfileType: kind, LocalhostRef: ref}}
	}
	for _, tc := range []struct {
		name        string
		sc          *runtimeapi.LinuxContainerSecurityContext
		hostEnabled bool
		wantProfile string
		wantNote    string
	}{
		{"none", nil, true, "", ""},
		{"unconfined", profile(runtimeapi.SecurityProfile_Unconfined, ""), true, "", ""},
		{"localhost on apparmor host", profile(runtimeapi.SecurityProfile_Localhost, "k8s-web"), true, "k8s-web", ""},
		{"localhost without apparmor", profile(runtimeapi.SecurityProfile_Localhost, "k8s-web"), false, "", "localhost/k8s-web"},
		{"runtime default on apparmor host", profile(runtimeapi.SecurityProfile_RuntimeDefault, ""), true, "", "runtime/default"},
		{"runtime default without apparmor", profile(runtimeapi.SecurityProfile_RuntimeDefault, ""), false, "", "runtime/default"},
		{"legacy localhost", &runtimeapi.LinuxContainerSecurityContext{ApparmorProfile: "localhost/k8s-db"}, true, "k8s-db", ""},
		{"legacy unconfined", &runtimeapi.LinuxContainerSecurityContext{ApparmorProfile: "unconfined"}, false, "", ""},
		{"field wins over legacy", &runtimeapi.LinuxContainerSecurityContext{ApparmorProfile: "localhost/x",
			Apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}}, true, "", ""},
		{"privileged", &runtimeapi.LinuxContainerSecurityContext{Privileged: true,
			Apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "p"}}, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := hostAppArmorEnabled
			hostAppArmorEnabled = func() bool { return tc.hostEnabled }
			t.Cleanup(func() { hostAppArmorEnabled = saved })
			process, annotations := &specs.Process{}, map[string]string{}
			if err := applyAppArmor(process, annotations, tc.sc); err != nil {
				t.Fatal(err)
			}
			if process.ApparmorProfile != tc.wantProfile || annotations[AnnotationUnappliedAppArmor] != tc.wantNote {
				t.Fatalf("profile %q annotations %v, want profile %q note %q", process.ApparmorProfile, annotations, tc.wantProfile, tc.wantNote)
			}
		})
	}
	for name, sc := range map[string]*runtimeapi.LinuxContainerSecurityContext{
		"empty localhost ref": profile(runtimeapi.SecurityProfile_Localhost, ""),
		"legacy unknown":      {ApparmorProfile: "strict"},
		"legacy empty name":   {ApparmorProfile: "localhost/"},
	} {
		if err := applyAppArmor(&specs.Process{}, map[string]string{}, sc); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
}
