package runc

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Version
	}{
		{"pinned", "runc version 1.5.3\ncommit: v1.5.3\nspec: 1.3.0\ngo: go1.26.8\nlibseccomp: 2.5.4\n",
			Version{Version: "1.5.3", Commit: "v1.5.3", Spec: "1.3.0", Libseccomp: "2.5.4"}},
		{"debian", "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\ngo: go1.19.8\nlibseccomp: 2.5.4\n",
			Version{Version: "1.1.5+ds1", Commit: "1.1.5+ds1-1+deb12u1", Spec: "1.0.2-dev", Libseccomp: "2.5.4"}},
		{"bare", "runc version 1.2.0", Version{Version: "1.2.0"}},
	} {
		got, err := ParseVersion(tc.out)
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseVersion = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if got := (Version{Version: "1.5.3", Spec: "1.3.0", Libseccomp: "2.5.4"}).String(); got != "runc 1.5.3 (spec 1.3.0, libseccomp 2.5.4)" {
		t.Errorf("String = %q", got)
	}
	for _, bad := range []string{"", "crun version 1.8\n", "usage: runc"} {
		if v, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %+v, want an error", bad, v)
		}
	}
}
