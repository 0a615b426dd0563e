package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// seccompProbe prints the seccomp mode of the container's process, then
// whether unshare(CLONE_NEWUSER) (outside the RuntimeDefault allow list) and
// mkdir (inside it) work, then that the shell is still alive.
const seccompProbe = `sed -n 's/^Seccomp:[[:space:]]*/seccomp=/p' /proc/self/status
if unshare -U true 2>/tmp/err; then echo unshare=ok; else echo "unshare=$(cat /tmp/err)"; fi
if mkdir /tmp/x 2>/tmp/err; then echo mkdir=ok; else echo "mkdir=$(cat /tmp/err)"; fi
echo alive`

// denyMkdirProfile is a Localhost profile in the Docker format that allows
// everything but mkdir and mkdirat.
const denyMkdirProfile = `{
  "defaultAction": "SCMP_ACT_ALLOW",
  "archMap": [
    {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
    {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}
  ],
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
}`

func TestSeccompProfiles(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "seccomp")
	podID := d.runPod(podCfg)
	profileFile := filepath.Join(t.TempDir(), "deny-mkdir.json")
	if err := os.WriteFile(profileFile, []byte(denyMkdirProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		profile    *runtimeapi.SecurityProfile
		legacy     string
		privileged bool
		want       []string // log lines in order
	}{
		{"runtime-default", &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "", false,
			[]string{"seccomp=2", "unshare=unshare: unshare(0x10000000): Operation not permitted", "mkdir=ok", "alive"}},
		{"legacy-docker-default", nil, "docker/default", false,
			[]string{"seccomp=2", "unshare=unshare: unshare(0x10000000): Operation not permitted", "mkdir=ok", "alive"}},
		{"unconfined", &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "", false,
			[]string{"seccomp=0", "unshare=ok", "mkdir=ok", "alive"}},
		{"localhost", &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: profileFile}, "", false,
			[]string{"seccomp=2", "unshare=ok", "mkdir=mkdir: can't create directory '/tmp/x': Operation not permitted", "alive"}},
		// Privileged containers ignore every profile, as critest expects.
		{"privileged-localhost", &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: profileFile}, "", true,
			[]string{"seccomp=0", "unshare=ok", "mkdir=ok", "alive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := shell(tc.name, seccompProbe)
			cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Seccomp: tc.profile, SeccompProfilePath: tc.legacy, Privileged: tc.privileged}}
			id := d.run(podID, podCfg, cfg)
			if st := d.waitExited(id, 20*time.Second); st.GetExitCode() != 0 {
				t.Errorf("exit code %d, want 0", st.GetExitCode())
			}
			var got []string
			for _, rec := range readLog(t, logPath(podCfg, cfg)) {
				got = append(got, rec.Content)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	// An exec joins the container's filter (critest checks seccomp this way).
	cfg := sleeper("exec-default")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}}
	id := d.run(podID, podCfg, cfg)
	resp, err := d.execSync(id, 10, "grep", "Seccomp:", "/proc/self/status")
	if err != nil || string(resp.GetStdout()) != "Seccomp:\t2\n" {
		t.Errorf("exec in a RuntimeDefault container: %q %v, want Seccomp: 2", resp.GetStdout(), err)
	}
	d.stopAndRemovePod(podID)
}

func TestSeccompLocalhostProfileMissing(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "seccomp-missing")
	podID := d.runPod(podCfg)
	missing := filepath.Join(t.TempDir(), "no-such-profile.json")
	cfg := shell("missing", "true")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: missing}}}
	_, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: podCfg})
	msg := wantCode(t, "CreateContainer with a missing Localhost profile", err, codes.InvalidArgument)
	if !strings.Contains(msg, "seccomp.localhost_ref") || !strings.Contains(msg, missing) {
		t.Errorf("message %q does not name the field and the path", msg)
	}
	d.stopAndRemovePod(podID)
}

// TestPodSeccompProfileConfinesBerthPause: the pod-level profile applies
// to the sandbox process, as containerd applies it to its pause container;
// a container of the pod sees PID 1 (berth-pause) filtered.
func TestPodSeccompProfileConfinesBerthPause(t *testing.T) {
	d := startDaemon(t)
	for _, tc := range []struct {
		name    string
		profile *runtimeapi.SecurityProfile
		want    string
	}{
		{"pod-unconfined", nil, "Seccomp:\t0"},
		{"pod-default", &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "Seccomp:\t2"},
	} {
		podCfg := podConfig(t, tc.name)
		shared := &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}
		podCfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: shared, Seccomp: tc.profile}
		podID := d.runPod(podCfg)
		cfg := sleeper("peek")
		cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: shared}}
		id := d.run(podID, podCfg, cfg)
		resp, err := d.execSync(id, 10, "sh", "-c", "cat /proc/1/cmdline; echo; grep Seccomp: /proc/1/status")
		out := string(resp.GetStdout())
		if err != nil || !strings.HasPrefix(out, "/berth-pause") || !strings.Contains(out, tc.want+"\n") {
			t.Errorf("%s: PID 1 of the pod: %q, %v; want berth-pause with %q", tc.name, out, err, tc.want)
		}
		d.stopAndRemovePod(podID)
	}
}
