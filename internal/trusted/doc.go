// Package trusted holds berth's one rule for a file or directory whose
// writer decides what berth, running as root, does (the registry
// auth_file, credential provider configs and plugins, watched manifest
// directories and files): it must be owned by root, or by the user berth
// runs as, and writable by neither group nor others, as sshd's
// StrictModes asks of ~/.ssh. Callers check what they opened, on the
// descriptor, so that what they use is what was checked. Standard library
// only.
package trusted
