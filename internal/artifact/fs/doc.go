// Package fs stores artifacts on the local file system: the embedded
// default of `keel dev`.
//
// Layout under the root directory:
//
//	objects/sha256/{hh}/{hash}   the content, named by its own sha256
//	runs/{run_id}/{checkpoint_id}~{name}
//	                             the pointer, a small file "{sha256 hex}
//	                             {size}\n" (the two parts of its name
//	                             escaped, see layout.go)
//	runs/{run_id}/checkpoints/{checkpoint_id}/{name}
//	                             the same pointer in older stores, and for
//	                             a key too long for one file name
//	tmp/                         temp files of over-long keys' pointers;
//	                             the others' are made beside their
//	                             destination, named .put-{digits}
//
// Keeping the content under its hash makes every object self-verifying
// (`sha256sum` of the file equals its name) and makes the pointer the only
// thing a key owns.
//
// Durability: when Put returns nil the content and the pointer survive a
// crash, power loss included. The content is written to a temp file in
// its shard directory, fsync'd, renamed to its hash and that directory
// fsync'd before the pointer is linked into place, so no crash can leave a
// pointer to missing or partial content (a crash between the two leaves an
// unreferenced object, which is harmless). Then the pointer's directory is
// fsync'd, and so is the parent of every directory on the way to the root
// that the Store does not know to be durable: the ones this Put created,
// and any it has not seen synced (another Put's, another process's, or
// all of them after a restart). Content a Put finds already stored is not
// written again, only its directory synced once. Each Put therefore
// fsyncs what it changed and nothing it knows is already on disk
// (TestPutSyncsWhatItChanged pins the sequence; Store.Syncs counts).
//
// The pointer is written to a fsync'd temp file and moved into place with
// link(2), which fails if the key exists, so two concurrent Puts of different
// content at one key can never both succeed: exactly one wins and the
// other gets artifact.ErrExists.
//
// Get re-hashes the content on every read and returns artifact.ErrCorrupt
// when it does not match the pointer, or when the object is missing.
package fs
