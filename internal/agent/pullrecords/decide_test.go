package pullrecords

import (
	"errors"
	"strings"
	"testing"
)

const (
	testImage = "reg.example:5000/team/app:v1"
	testRepo  = "reg.example:5000/team/app"
)

// recorded is a secret as records keep it, its credential hash made of h.
func recorded(ns, name, uid, h string) Secret {
	return Secret{Namespace: ns, Name: name, UID: uid, CredentialHash: "hmac-sha256:" + h}
}

var (
	secretA      = recorded("default", "regcred", "uid-a", "aaaa")
	secretAMoved = recorded("other", "copy", "uid-c", "aaaa")
	secretARotd  = recorded("default", "regcred", "uid-a", "new")
	secretB      = recorded("default", "other", "uid-b", "bbbb")
)

func mustVerification(t *testing.T, p Policy, allow ...string) Verification {
	t.Helper()
	v, err := NewVerification(p, allow)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func recordWith(repo string, c Credentials) *Pulled {
	return &Pulled{ImageRef: "sha256:img", Credentials: map[string]Credentials{repo: c}}
}

// TestDecide is kubelet's MustAttemptImagePull, case by case.
func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		policy   Policy
		allow    []string
		byAgent  bool
		rec      *Pulled
		pod      []Secret
		wantPull bool
		wantWhy  string
		learn    *Secret
	}{
		{name: "never verify", policy: NeverVerify, byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA))},
		{name: "preloaded, default policy", policy: "", byAgent: false},
		{name: "preloaded, always verify", policy: AlwaysVerify, wantPull: true, wantWhy: whyNoRecord},
		{name: "intent only (crash)", policy: NeverVerifyPreloadedImages, byAgent: true, wantPull: true, wantWhy: whyUnfinished},
		{name: "node-wide", policy: AlwaysVerify, byAgent: true, rec: recordWith(testRepo, NodeWideCredentials())},
		{name: "unknown credentials", policy: NeverVerifyPreloadedImages, byAgent: true, rec: recordWith(testRepo, Credentials{}), wantPull: true, wantWhy: whyUnknownCreds},
		{name: "pulled under another name", policy: NeverVerifyPreloadedImages, byAgent: true, rec: recordWith("reg.example:5000/other", NodeWideCredentials()), wantPull: true, wantWhy: whyOtherName},
		{name: "same secret", byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA)), pod: []Secret{secretB, secretA}},
		{name: "no secret", byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA)), wantPull: true, wantWhy: whyOtherSecrets},
		{name: "another secret", byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA)), pod: []Secret{secretB}, wantPull: true, wantWhy: whyOtherSecrets},
		{name: "same credential elsewhere", byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA)), pod: []Secret{secretAMoved}, learn: &secretAMoved},
		{name: "same secret rotated", byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA)), pod: []Secret{secretARotd}, learn: &secretARotd},
		{name: "empty hashes never match", byAgent: true, rec: recordWith(testRepo, SecretCredentials(Secret{Namespace: "a", Name: "x"})), pod: []Secret{{Namespace: "b", Name: "y"}}, wantPull: true, wantWhy: whyOtherSecrets},
		{name: "allowlisted repository", policy: NeverVerifyAllowlistedImages, allow: []string{testRepo}, byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA))},
		{name: "allowlisted prefix", policy: NeverVerifyAllowlistedImages, allow: []string{"reg.example:5000/*"}, byAgent: true, rec: recordWith(testRepo, SecretCredentials(secretA))},
		{name: "not allowlisted, preloaded", policy: NeverVerifyAllowlistedImages, allow: []string{"reg.example:5000/team/other"}, wantPull: true, wantWhy: whyNoRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVerification(t, tc.policy, tc.allow...)
			asked := false
			d, err := decide(v, testImage, testRepo, tc.byAgent, tc.rec, func() ([]Secret, error) { asked = true; return tc.pod, nil })
			if err != nil {
				t.Fatal(err)
			}
			if d.Pull != tc.wantPull || d.Why != tc.wantWhy {
				t.Errorf("decision %+v, want pull %t why %q", d, tc.wantPull, tc.wantWhy)
			}
			if (d.learn == nil) != (tc.learn == nil) || d.learn != nil && *d.learn != *tc.learn {
				t.Errorf("learns %v, want %v", d.learn, tc.learn)
			}
			if asked && (tc.rec == nil || len(tc.rec.Credentials[testRepo].Secrets) == 0) {
				t.Errorf("the pod's secrets were read, though the record has none to match")
			}
		})
	}
}

func TestDecidePassesOnThePodSecretsError(t *testing.T) {
	v := mustVerification(t, "")
	d, err := decide(v, testImage, testRepo, true, recordWith(testRepo, SecretCredentials(secretA)), func() ([]Secret, error) {
		return nil, errors.New(`image pull secret "regcred": not a docker config.json`)
	})
	if err == nil || !d.Pull || d.Why != whyPodPullRefsErr {
		t.Errorf("decision %+v, error %v; want a pull and the error", d, err)
	}
}

func TestMergeKeepsSecretsOncePerCoordinates(t *testing.T) {
	p := &Pulled{ImageRef: "sha256:x"}
	steps := []struct {
		creds   *Credentials
		changed bool
		want    string
	}{
		{nil, false, "map[]"},
		{&Credentials{}, false, "map[]"},
		{&Credentials{Secrets: []Secret{secretB}}, true, "[default/other]"},
		{&Credentials{Secrets: []Secret{secretB}}, false, "[default/other]"},
		{&Credentials{Secrets: []Secret{secretA}}, true, "[default/other default/regcred]"},
		{&Credentials{Secrets: []Secret{secretARotd}}, true, "[default/other default/regcred]"},
		{&Credentials{NodeWide: true}, true, "node-wide"},
		{&Credentials{Secrets: []Secret{secretB}}, false, "node-wide"},
	}
	for i, s := range steps {
		if got := p.merge(testRepo, s.creds); got != s.changed {
			t.Errorf("step %d: changed %t, want %t", i, got, s.changed)
		}
		if got := describe(p.Credentials); got != s.want {
			t.Errorf("step %d: %s, want %s", i, got, s.want)
		}
	}
}

func describe(m map[string]Credentials) string {
	c, ok := m[testRepo]
	switch {
	case !ok:
		return "map[]"
	case c.NodeWide:
		return "node-wide"
	}
	names := make([]string, len(c.Secrets))
	for i, s := range c.Secrets {
		names[i] = s.String()
		if s.Name == "regcred" && !strings.HasPrefix(s.CredentialHash, "hmac-sha256:") {
			return "bad hash"
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}
