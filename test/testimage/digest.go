package testimage

// go-digest hashes with the registered crypto.SHA256.
import _ "crypto/sha256"
