// Package image owns berth's local image store: image references, the
// content-addressed blob store, import of OCI layouts / OCI archives /
// `docker save` archives, registry pulls (pull*.go, through
// internal/registry), the safe layer extractor, the image index and the
// overlay rootfs of containers.
//
// On-disk layout under the store root (the daemon passes <root>/images):
//
//	lock                     flock(2) taken by every writer (Import, Remove,
//	                         Prune, the commit step of Pull)
//	generation               counter bumped after every index change; readers
//	                         re-read the index when it differs from their cache
//	blobs/sha256/<hex>       verified blobs: manifests, configs, layer blobs
//	layers/<chainid-hex>/    one unpacked layer tree per chain id, an overlay
//	                         lowerdir; whiteouts are 0/0 char devices and opaque
//	                         dirs carry trusted.overlay.opaque=y
//	index/<id-hex>.json      one record per image (atomic: temp+fsync+rename),
//	                         versioned (recordVersion)
//	quarantine/              records the store could not read, set aside as
//	                         <time>-<id-hex>.json beside a .reason file; never
//	                         deleted by berth
//	tmp/                     private staging dirs, each flock(2)ed by its owner
//	                         (imports, pulls, layer downloads); an unheld dir
//	                         older than a minute is a dead writer's and removed
//
// Rules:
//   - Nothing becomes visible before it is verified: blobs are hashed against
//     their descriptors, layers against the config's diff ids, in tmp/; only
//     then are they renamed into place, and records are written last.
//   - Two processes may use one store: writers serialize on the flock, readers
//     take no lock and rely on atomic renames plus the generation counter.
//   - A bad record never disables the store: readers skip it (Quarantined
//     reports it), the next writer moves it to quarantine/ under the flock
//     (quarantine.go). Garbage collection keeps every blob and layer a
//     set-aside record names, and deletes nothing while one is not JSON.
//   - The extractor (extract*.go) treats archives as hostile: every path is
//     resolved with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS) beneath the
//     layer dir, final components are never followed, sizes are bounded.
//   - Unpacking is bounded (limits.go, SetLimits): per file, per layer, per
//     image (the uncompressed bytes one pull or import unpacks for it, its
//     layers counted together as they unpack in parallel) and by a reserve
//     of free space on the store's filesystem, checked before each layer
//     and every 16 MiB during it. Errors name the limit's config key.
//   - Layers are unpacked one by one, each into its own directory: an entry
//     whose parent is a symlink that lives in a lower layer becomes a real
//     directory in this layer (the per-layer apply model).
//   - Image.Size is the sum of the layer blobs' sizes as stored (compressed),
//     as containerd reports it.
//   - Pulls download and unpack without the store lock, each layer into its
//     own held staging dir, and take the lock only to commit. In-process
//     single flight: one pull per (reference, credentials), one download
//     per (credentials, layer blob); the flight runs on its own context,
//     cancelled when every caller waiting for it has given up. The pull
//     commit and Prune clear staging dirs that no live process holds.
//   - Callers must not Remove an image whose layers are mounted; as a guard,
//     garbage collection keeps layer dirs that appear in a live overlay mount
//     and collects them on a later Remove.
package image
