// Package testimage builds small, deterministic test images from the host's
// busybox-static (/bin/busybox) without network access: as an OCI image
// layout directory, an OCI archive, or a `docker save` archive.
//
// Content: /bin/busybox plus applet symlinks in /bin, /etc/passwd and
// /etc/group (root 0, daemon 1, berth 1000, nobody 65534; group extra 2000
// with member berth), /tmp (1777), /root, /home/berth (owned 1000:1000).
// Every timestamp is fixed, so equal Options give an equal image id.
// Rules: Go only, no external tools; nothing here is used outside tests.
package testimage
