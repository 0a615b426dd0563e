// Package config owns berth's configuration file (TOML, default
// /etc/berth/config.toml): its keys, their defaults and their validation.
//
// Rules:
//   - The zero value of every field means "use the default"; ApplyDefaults
//     fills them, and paths derived from the state directory (socket, runc
//     root) follow the configured state directory, not the default one.
//   - Unknown keys are errors: a misspelt key must not be silently ignored.
//   - Every error names the key (and, from Load, the file) and wraps
//     errdefs.ErrInvalidArgument; a missing explicit file wraps ErrNotFound.
//   - Helper binaries (runc, berth-monitor, berth-pause) are configured as an
//     absolute path or a bare name; bare names are resolved at use, not at load.
//   - ChangedKeys names what differs between two configurations by their
//     dotted keys; berth serve's SIGHUP reload decides which it applies.
//   - docs/config.example.toml lists every key with its default; a test keeps
//     it equal to Default().
package config
