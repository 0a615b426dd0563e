package registry

import (
	"fmt"
	"os"

	"github.com/berth-dev/berth/test/testpki"

	"golang.org/x/crypto/bcrypt"
)

// writeHtpasswd writes an htpasswd file with one bcrypt entry, the only
// hash the registry accepts.
func writeHtpasswd(path, user, password string) error {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return fmt.Errorf("htpasswd: %w", err)
	}
	if err := os.WriteFile(path, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		return fmt.Errorf("htpasswd: %w", err)
	}
	return nil
}

// writeTestCA writes ca.crt (a fresh CA of the test's own), server.crt and
// server.key (a certificate of that CA for 127.0.0.1, ::1 and localhost)
// into dir.
func writeTestCA(dir string) error {
	ca, err := testpki.NewCA(dir, "berth test CA")
	if err != nil {
		return fmt.Errorf("test CA: %w", err)
	}
	if _, _, err := ca.Server("server", "127.0.0.1", "::1", "localhost"); err != nil {
		return fmt.Errorf("test CA: %w", err)
	}
	return nil
}
