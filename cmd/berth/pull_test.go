package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestParseCreds(t *testing.T) {
	auth, err := parseCreds("alice:s3:cret")
	if err != nil || auth.Username != "alice" || auth.Password != "s3:cret" {
		t.Errorf("parseCreds(alice:s3:cret) = %+v, %v; want alice / s3:cret", auth, err)
	}
	if auth, err := parseCreds(""); auth != nil || err != nil {
		t.Errorf("parseCreds(\"\") = %+v, %v; want nil, nil (keychain)", auth, err)
	}
	for _, bad := range []string{"alice", ":pw"} {
		if _, err := parseCreds(bad); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("parseCreds(%q) = %v; want InvalidArgument", bad, err)
		}
	}
}

func TestPullErrorSaysWhatToDo(t *testing.T) {
	for class, hint := range map[error]string{
		errdefs.ErrNotFound:           "check the name and tag",
		errdefs.ErrFailedPrecondition: "--creds",
		errdefs.ErrUnavailable:        "reachable",
	} {
		err := pullError("busybox", "registry.test/library/busybox:latest", fmt.Errorf("registry 127.0.0.1:5000: boom: %w", class))
		if !errors.Is(err, class) || !strings.Contains(err.Error(), `"busybox"`) || !strings.Contains(err.Error(), hint) {
			t.Errorf("pullError(%v) = %q; want the class kept, the image named and a hint with %q", class, err, hint)
		}
	}
}

func TestPullErrorNamesTheImageOnce(t *testing.T) {
	inner := fmt.Errorf("image %q: manifest unknown: %w", "registry.test/library/busybox:latest", errdefs.ErrNotFound)
	msg := pullError("busybox", "registry.test/library/busybox:latest", inner).Error()
	if strings.Count(msg, "busybox") != 1 {
		t.Errorf("error %q names the image more than once", msg)
	}
}
