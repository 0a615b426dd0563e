package image

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/berth-dev/berth/internal/errdefs"
)

// DefaultDomain is the registry domain that short names ("busybox") expand
// to, in the familiar spelling CRI clients use. It is derived from the
// parser's default registry rather than spelled out here.
var DefaultDomain = strings.TrimPrefix(name.DefaultRegistry, "index.")

var (
	sha256Hex    = regexp.MustCompile(`^[a-f0-9]{64}$`)
	hexPrefix    = regexp.MustCompile(`^[a-f0-9]{1,64}$`)
	digestPrefix = "sha256:"
)

// parsedRef is a normalized reference split into its parts.
type parsedRef struct {
	repo   string // "<domain>/<path>"
	tag    string // "" when digest is set
	digest string // "sha256:<hex>" or ""
}

func (p parsedRef) String() string {
	if p.digest != "" {
		return p.repo + "@" + p.digest
	}
	return p.repo + ":" + p.tag
}

// NormalizeRef returns the fully qualified form of an image reference:
// "busybox" → "<DefaultDomain>/library/busybox:latest"; explicit registries
// ("localhost:5000/x") are kept, a missing tag becomes "latest", and digest
// references stay digest references ("name@sha256:<hex>", any tag dropped).
// An unparsable reference is errdefs.ErrInvalidArgument.
func NormalizeRef(ref string) (string, error) {
	p, err := parseRef(ref)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

func parseRef(ref string) (parsedRef, error) {
	if ref == "" || strings.TrimSpace(ref) != ref {
		return parsedRef{}, fmt.Errorf("image reference %q: %w", ref, errdefs.ErrInvalidArgument)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return parsedRef{}, fmt.Errorf("image reference %q: %v: %w", ref, err, errdefs.ErrInvalidArgument)
	}
	repo := r.Context()
	domain := repo.RegistryStr()
	if domain == name.DefaultRegistry {
		domain = DefaultDomain
	}
	p := parsedRef{repo: domain + "/" + repo.RepositoryStr()}
	switch v := r.(type) {
	case name.Digest:
		p.digest = v.DigestStr()
		if !strings.HasPrefix(p.digest, digestPrefix) || !sha256Hex.MatchString(strings.TrimPrefix(p.digest, digestPrefix)) {
			return parsedRef{}, fmt.Errorf("image reference %q: digest: only sha256 is supported: %w", ref, errdefs.ErrInvalidArgument)
		}
	case name.Tag:
		p.tag = v.TagStr()
	}
	return p, nil
}

// repoDigest is "<repo>@<digest>" for a normalized tag.
func repoDigest(normalizedTag, digest string) string {
	p, err := parseRef(normalizedTag)
	if err != nil {
		return ""
	}
	return p.repo + "@" + digest
}
