// Package fs stores artifacts on the local file system: the embedded
// default of `keel dev`.
//
// Layout under the root directory:
//
//	objects/sha256/{hh}/{hash}   the content, named by its own sha256
//	runs/{run_id}/checkpoints/{checkpoint_id}/{name}
//	                             a small pointer file: "sha256 size\n"
//	tmp/                         temp files, on the same file system
//
// Keeping the content under its hash makes every object self-verifying
// (`sha256sum` of the file equals its name) and makes the pointer the only
// thing a key owns.
//
// Durability: when Put returns nil the object and the pointer have been
// written to a temp file, fsync'd, moved into place and their directories
// fsync'd. The pointer is moved into place with link(2), which fails if the
// key exists, so two concurrent Puts of different content at one key can
// never both succeed: exactly one wins and the other gets
// artifact.ErrExists. A crash between the object and the pointer leaves an
// unreferenced object, which is harmless.
//
// Get re-hashes the content on every read and returns artifact.ErrCorrupt
// when it does not match the pointer, or when the object is missing.
package fs
