package oci

import (
	"fmt"
	"os"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// AppArmor support is deliberately small. berth loads no profiles of its
// own (that needs apparmor_parser), so:
//
//   - Localhost: on a host with AppArmor enabled, the container runs under
//     the named profile, which must already be loaded (runc reports it
//     otherwise).
//   - RuntimeDefault: berth has no loaded default profile to give; the
//     container runs unconfined and AnnotationUnappliedAppArmor says so.
//   - On a host without AppArmor every requested profile is recorded in
//     AnnotationUnappliedAppArmor and nothing else happens.
//   - Unconfined, no request, and privileged containers: nothing.

// appArmorEnabledFile reads "Y" when the kernel's AppArmor module is active.
const appArmorEnabledFile = "/sys/module/apparmor/parameters/enabled"

// hostAppArmorEnabled is replaced in tests.
var hostAppArmorEnabled = func() bool {
	data, err := os.ReadFile(appArmorEnabledFile)
	return err == nil && strings.TrimSpace(string(data)) == "Y"
}

// applyAppArmor sets process.apparmorProfile for a Localhost profile on an
// AppArmor host, or records the request it cannot apply in annotations.
func applyAppArmor(process *specs.Process, annotations map[string]string, sc *runtimeapi.LinuxContainerSecurityContext) error {
	if sc.GetPrivileged() {
		return nil
	}
	kind, name, err := requestedAppArmor(sc)
	if err != nil {
		return err
	}
	switch {
	case kind == runtimeapi.SecurityProfile_Unconfined:
		return nil
	case kind == runtimeapi.SecurityProfile_Localhost && hostAppArmorEnabled():
		process.ApparmorProfile = name
		return nil
	case kind == runtimeapi.SecurityProfile_Localhost:
		annotations[AnnotationUnappliedAppArmor] = "localhost/" + name
	default:
		annotations[AnnotationUnappliedAppArmor] = "runtime/default"
	}
	return nil
}

// requestedAppArmor reads the apparmor field, falling back to the deprecated
// apparmor_profile string ("runtime/default", "unconfined",
// "localhost/<name>").
func requestedAppArmor(sc *runtimeapi.LinuxContainerSecurityContext) (runtimeapi.SecurityProfile_ProfileType, string, error) {
	if p := sc.GetApparmor(); p != nil {
		if p.GetProfileType() == runtimeapi.SecurityProfile_Localhost && p.GetLocalhostRef() == "" {
			return 0, "", fmt.Errorf("security context: apparmor.localhost_ref: empty: %w", errdefs.ErrInvalidArgument)
		}
		return p.GetProfileType(), p.GetLocalhostRef(), nil
	}
	legacy := sc.GetApparmorProfile()
	switch {
	case legacy == "" || legacy == "unconfined":
		return runtimeapi.SecurityProfile_Unconfined, "", nil
	case legacy == "runtime/default":
		return runtimeapi.SecurityProfile_RuntimeDefault, "", nil
	case strings.HasPrefix(legacy, "localhost/") && len(legacy) > len("localhost/"):
		return runtimeapi.SecurityProfile_Localhost, strings.TrimPrefix(legacy, "localhost/"), nil
	}
	return 0, "", fmt.Errorf("security context: apparmor_profile %q: unknown profile: %w", legacy, errdefs.ErrInvalidArgument)
}
