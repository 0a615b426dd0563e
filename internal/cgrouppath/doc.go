// Package cgrouppath knows the two forms of an OCI linux.cgroupsPath and
// where each puts a container's cgroup below a hierarchy's root.
//
//   - cgroupfs form: a path such as /kubepods/besteffort/pod1/<id>, used as
//     it is (cleaned, made absolute).
//   - systemd form: "<slice>:<prefix>:<name>", as runc's systemd driver
//     reads it. The slice names its place in the tree by dashes:
//     a-b-c.slice is the directory /a.slice/a-b.slice/a-b-c.slice, and -.slice
//     is the root; an empty slice is system.slice. The container's cgroup is
//     the scope unit <prefix>-<name>.scope inside the slice (a name ending in
//     .slice is a slice of its own, named as it is). kubelet's systemd
//     driver names a pod's slice by that directory
//     (/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice);
//     SliceName turns it back into the slice, accepting only an exact
//     expansion.
//
// Rules: pure string work on the standard library and errdefs only; Dir
// has a twin in C (native/berth-monitor, oom.c), which finds a container's
// OOM counter from the same cgroupsPath: change both together. Every name that could step out of the
// hierarchy ("/" in a slice, prefix or name; "..") is refused with an error
// wrapping errdefs.ErrInvalidArgument, so a returned directory is always
// below the root it is joined to.
package cgrouppath
