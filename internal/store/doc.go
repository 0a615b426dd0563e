// Package store owns berth's generic storage building blocks: atomically
// written files and JSON records, the name registrar and the unique-prefix
// id index.
// It knows no domain types; pod and image build their stores on top of it.
//
// Rules:
//   - Every file is written by the one temp+rename writer, replaceFile: a
//     reader, or a process killed at any moment, sees either the old content
//     or the new, never a torn file, and a failed write leaves the old
//     content in place and no temporary file behind. Image, network, monitor
//     and the agent use it too.
//   - Flushing is chosen by what must survive a power loss, one call per
//     case: WriteFileAtomic and SaveJSON fsync the file before the rename
//     and the directory after it (what must survive a reboot: the first
//     write of a record, an intent before side effects that outlive a
//     reboot); UpdateJSON fsyncs the file once, not the rename (a record
//     update whose loss recovery handles as the previous state: old or new
//     content survives, never an empty file); WriteFileVolatile flushes
//     nothing (files under the state directory, which a reboot clears).
//     Fsyncs counts the flushes made.
//   - Records are versioned: the caller's struct carries a `Version int` field
//     so a future berth can migrate what an older one wrote. LoadVersionedJSON
//     checks the version before decoding anything else: a record of a newer
//     berth (a downgrade) is ErrUnknownVersion, never misread.
//   - A missing record is errdefs.ErrNotFound; a corrupt one is an error that
//     names the file.
//   - Registrar and IDIndex are in-memory and safe for concurrent use; callers
//     rebuild them from the records on start.
package store
