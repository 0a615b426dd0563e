package runc

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Version is what `runc --version` says of itself.
type Version struct {
	Version    string `json:"version"`              // "1.5.3"
	Commit     string `json:"commit,omitempty"`     // the build's commit line, e.g. "v1.5.3"
	Spec       string `json:"spec,omitempty"`       // the OCI runtime-spec version it implements
	Libseccomp string `json:"libseccomp,omitempty"` // the libseccomp it was linked with
}

// String is "runc 1.5.3 (spec 1.3.0, libseccomp 2.5.4)".
func (v Version) String() string {
	var extra []string
	if v.Spec != "" {
		extra = append(extra, "spec "+v.Spec)
	}
	if v.Libseccomp != "" {
		extra = append(extra, "libseccomp "+v.Libseccomp)
	}
	if len(extra) == 0 {
		return "runc " + v.Version
	}
	return fmt.Sprintf("runc %s (%s)", v.Version, strings.Join(extra, ", "))
}

// Version runs `runc --version`.
func (r *Runc) Version(ctx context.Context) (Version, error) {
	out, err := exec.CommandContext(ctx, r.binary(), "--version").Output()
	if err != nil {
		return Version{}, fmt.Errorf("%s --version: %w", r.binary(), err)
	}
	return ParseVersion(string(out))
}

// ParseVersion reads `runc --version`'s output: "runc version X" first,
// then "key: value" lines.
func ParseVersion(out string) (Version, error) {
	var v Version
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "runc version "); ok {
			v.Version = strings.TrimSpace(rest)
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "commit":
			v.Commit = value
		case "spec":
			v.Spec = value
		case "libseccomp":
			v.Libseccomp = value
		}
	}
	if v.Version == "" {
		return Version{}, fmt.Errorf("runc --version: no version line in %q", out)
	}
	return v, nil
}
