// Package logrotate rotates the agent's container logs, as the kubelet's
// container log manager does (containerLogMaxSize, containerLogMaxFiles,
// containerLogMonitorInterval, containerLogMaxWorkers), and names the
// rotated files for the readers (`berth logs`).
//
// Every Policy.Interval the Manager lists the running containers (through
// the function the agent gives it: the agent's pods, their CRI log paths)
// and, with Policy.Workers at once, rotates each log larger than
// Policy.MaxSize:
//
//  1. leftovers of an interrupted round go: "<log>.<stamp>.tmp" files
//     (but that of a compression under way), and a plain rotated file
//     whose ".gz" exists;
//  2. the oldest rotated files go, so that with the current log and the one
//     about to be rotated at most Policy.MaxFiles remain;
//  3. the log is renamed to "<log>.<stamp>" (stamp: UTC, 20060102-150405)
//     and the runtime asked to reopen it (CRI ReopenContainerLog); if that
//     fails, the rename is undone and the next round tries again;
//  4. in the background, the rotated files still plain but the newest are
//     gzip-compressed (to "<log>.<stamp>.tmp", renamed to
//     "<log>.<stamp>.gz", then the plain one removed), newer first, one
//     compression per log and Policy.Workers in all at a time.
//
// So the newest rotated file is always plain (a reader that had the log
// open still reads it), the older ones compressed once the compression
// has caught up. A log that is missing is reopened (a round cut short
// between rename and reopen).
//
// Rotation never waits for gzip: the kubelet compresses before it
// rotates, so a log written faster than gzip compresses (a busy node, a
// slow CPU) makes each round longer and each file larger, without bound.
// Here every round rotates a log over the size, so files stay near
// Policy.MaxSize (plus one interval's writing) and at most Policy.MaxFiles
// are kept, compressed or not; a file removed as beyond them while it is
// compressed leaves no compressed copy.
//
// Every file operation is made on a descriptor of the container's log
// directory, opened beneath the pods' log root without following
// symlinks (RemoveLog too, which removes a removed container's log and
// rotated files); renames never replace (a log rotated twice in one second
// waits for the next round). Files in the directory the package did not
// name are left alone.
//
// Deliberate differences from the kubelet: stamps are UTC (local time
// would misorder files across a DST change), a rename never replaces a
// file, and compression runs after the rotation, apart from it.
package logrotate
