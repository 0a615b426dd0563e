// Package imagegc is the node agent's image garbage collection: kubelet's
// image GC manager over the CRI image service (package criclient).
//
// Every Period (kubelet: 5 minutes) a Manager lists the runtime's images
// and containers and keeps, in memory, when it first saw each image and
// when it last saw a container use it (kubelet's image records: a
// restarted agent starts them afresh). It then removes:
//
//   - unused images whose last use (or, never used, their first sighting)
//     is older than Policy.MaxAge, when MaxAge is set;
//   - when the image filesystem (CRI ImageFsInfo's mountpoint, measured
//     with statfs as kubelet's cAdvisor does) is HighThresholdPercent full
//     or more, unused images, least recently used first, until
//     LowThresholdPercent would be reached.
//
// An image is never removed while a container the runtime lists (in any
// state) uses it, while a pod the agent runs names it (Config.Needed),
// when the runtime pins it (CRI Image.pinned), or before MinAge has passed
// since it was first seen (it may have just been pulled for a container).
// A HighThresholdPercent of 100 turns image garbage collection off, as in
// kubelet. DeleteUnusedImages removes every image that may go at once: the
// eviction manager's way to reclaim disk. After each round, Config.Collected
// learns which images are left (the agent prunes its image pull records).
package imagegc
