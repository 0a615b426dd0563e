// Package store owns berth's generic durable building blocks: atomically
// written JSON records, the name registrar and the unique-prefix id index.
// It knows no domain types; pod and image build their stores on top of it.
//
// Rules:
//   - Every file is written with WriteFileAtomic: a reader sees either the old
//     content or the new, never a torn file, and a failed write leaves the old
//     content in place and no temporary file behind. It is berth's one
//     temp+fsync+rename+fsync-dir writer: image and network use it too.
//   - Records are versioned: the caller's struct carries a `Version int` field
//     so a future berth can migrate what an older one wrote. LoadVersionedJSON
//     checks the version before decoding anything else: a record of a newer
//     berth (a downgrade) is ErrUnknownVersion, never misread.
//   - A missing record is errdefs.ErrNotFound; a corrupt one is an error that
//     names the file.
//   - Registrar and IDIndex are in-memory and safe for concurrent use; callers
//     rebuild them from the records on start.
package store
