package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// Private images from an htpasswd registry: a pod whose imagePullSecrets
// hold the password pulls and runs, even when the first matching secret
// has a stale password (dockerconfigjson) and only the second one
// (dockercfg) the right one; a pod without a secret for the registry
// waits in ErrImagePull / ImagePullBackOff with the registry's refusal in
// its message.
func TestPrivateImagesPulledWithThePodsSecrets(t *testing.T) {
	onEachRuntime(t, privateImagesPulledWithThePodsSecrets)
}

func privateImagesPulledWithThePodsSecrets(t *testing.T, n *node) {
	reg := registry.StartT(t, registry.Options{Username: "puller", Password: "pw-" + harness.RandomHex(8)})
	n.rt.plainHTTPRegistry(t, reg.Host)
	push := func(tag string) string {
		p, err := reg.PushImage("berth-test/private:"+tag, testimage.Options{ExtraFiles: map[string]string{"/etc/private": tag + "\n"}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Ref
	}
	withSecrets, withoutSecret := push("with-secrets"), push("without-secret")
	basic := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	n.apply("private.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: stale}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"http://%[1]s": {"username": "%[2]s", "password": "stale-password"}}}'
---
apiVersion: v1
kind: Secret
metadata: {name: current}
type: kubernetes.io/dockercfg
stringData:
  .dockercfg: '{"%[1]s": {"auth": "%[3]s"}}'
---
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  terminationGracePeriodSeconds: 1
  imagePullSecrets: [{name: stale}, {name: current}]
  containers:
  - {name: app, image: "%[4]s", command: [sh, -c, "cat /etc/private; sleep 1000"]}
---
apiVersion: v1
kind: Pod
metadata: {name: no-secret}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "%[5]s", command: [sleep, "1000"]}
`, reg.Host, reg.Username, basic, withSecrets, withoutSecret))

	n.waitPod("private", "running from the private image", func(p v1.Pod) bool {
		return containerStatus(p, "app").State.Running != nil
	})
	n.waitExec("private", "app", "the private image's file", func(out string) bool { return out == "with-secrets\n" }, "cat", "/etc/private")
	if !n.hasEvent("private", "Pulled") {
		t.Errorf("private: no Pulled event")
	}

	reasons := map[string]bool{}
	var message string
	n.waitPod("no-secret", "ErrImagePull, then ImagePullBackOff", func(p v1.Pod) bool {
		if w := containerStatus(p, "app").State.Waiting; w != nil {
			reasons[w.Reason] = true
			if w.Reason == "ErrImagePull" {
				message = w.Message
			}
		}
		return reasons["ErrImagePull"] && reasons["ImagePullBackOff"]
	})
	if lower := strings.ToLower(message); !strings.Contains(message, withoutSecret) || !strings.Contains(lower, "unauthorized") && !strings.Contains(lower, "401") {
		t.Errorf("no-secret: ErrImagePull message %q; want the image and the registry's refusal (401 / unauthorized)", message)
	}
	if strings.Contains(message, reg.Password) {
		t.Errorf("no-secret: message %q holds the password", message)
	}
}

// A pod without imagePullSecrets pulls a private image with the
// credentials of a kubelet credential provider plugin (a shell script
// here), which gets a CredentialProviderRequest for the image.
func TestCredentialProviderPlugin(t *testing.T) {
	onEachRuntimeWith(t, credentialProviderPlugin)
}

func credentialProviderPlugin(t *testing.T, start func(...string) *node) {
	reg := registry.StartT(t, registry.Options{Username: "puller", Password: "pw-" + harness.RandomHex(8)})
	p, err := reg.PushImage("berth-test/plugin:v1", testimage.Options{ExtraFiles: map[string]string{"/etc/private": "plugin\n"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	requests := filepath.Join(dir, "requests")
	response := fmt.Sprintf(`{"kind": "CredentialProviderResponse", "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
 "cacheKeyType": "Registry", "cacheDuration": "1m", "auth": {%q: {"username": %q, "password": %q}}}`, reg.Host, reg.Username, reg.Password)
	writeFile(t, filepath.Join(dir, "response.json"), response)
	writeExecutable(t, filepath.Join(dir, "bin", "test-plugin"),
		fmt.Sprintf("#!/bin/sh\ncat >> %s\necho >> %[1]s\ncat %s\n", requests, filepath.Join(dir, "response.json")))
	config := filepath.Join(dir, "providers.yaml")
	writeFile(t, config, fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: test-plugin
  matchImages: [%q]
  defaultCacheDuration: 10s
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`, reg.Host))
	n := start("--image-credential-provider-config="+config, "--image-credential-provider-bin-dir="+filepath.Join(dir, "bin"))
	n.rt.plainHTTPRegistry(t, reg.Host)
	n.apply("plugin.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: plugin}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %q, command: [sleep, "1000"]}
`, p.Ref))
	n.waitPod("plugin", "running from the private image", func(p v1.Pod) bool {
		return containerStatus(p, "app").State.Running != nil
	})
	got, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"image":%q`, reg.Host+"/berth-test/plugin")
	if !strings.Contains(string(got), `"kind":"CredentialProviderRequest"`) || !strings.Contains(string(got), want) {
		t.Errorf("the plugin's requests %s; want a CredentialProviderRequest with %s", got, want)
	}
}

// writeExecutable writes a script, creating its directory.
func writeExecutable(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o700); err != nil {
		t.Fatal(err)
	}
}
