// Package fs stores artifacts on the local file system: the embedded
// default of `keel dev`.
//
// Layout under the root directory:
//
//	objects/sha256/{hh}/{hash}   the content, named by its own sha256
//	runs/{run_id}/{checkpoint_id}~{name}
//	                             the key (its two parts escaped, see
//	                             layout.go): for content up to 16 KiB a hard
//	                             link to the object itself, otherwise a
//	                             pointer file "{sha256 hex} {size}\n"
//	                             (pointer.go)
//	runs/{run_id}/checkpoints/{checkpoint_id}/{name}
//	                             the same, in older stores (always a
//	                             pointer file) and for a key too long for
//	                             one file name
//	tmp/                         temp files of over-long keys' pointers;
//	                             the others' are made beside their
//	                             destination, named .put-{digits}
//
// Keeping the content under its hash makes every object self-verifying
// (`sha256sum` of the file equals its name).
//
// Durability: when Put returns nil the content and the key survive a
// crash, power loss included. The content is written to a temp file in
// its shard directory, fsync'd, linked to its hash and that directory
// fsync'd before the key is made, so no crash can leave a key to missing
// or partial content (a crash between the two leaves an unreferenced
// object, which is harmless). Then the key's directory is fsync'd, and so
// is the parent of every directory on the way to the root that the Store
// does not know to be durable: the ones this Put created, and any it has
// not seen synced (another Put's, another process's, or all of them after
// a restart). Content a Put finds already stored is not written again,
// only its directory synced once. Each Put therefore fsyncs what it
// changed and nothing it knows is already on disk
// (TestPutSyncsWhatItChanged pins the sequence; Store.Syncs counts).
//
// The key is made with link(2), to the object or to a fsync'd temp file
// holding the pointer, which fails if the key exists, so two concurrent
// Puts of different content at one key can never both succeed: exactly
// one wins and the other gets artifact.ErrExists.
//
// Get re-hashes the content on every read and returns artifact.ErrCorrupt
// when it does not match, or when the object is missing. List reads
// pointers, and small content (it hashes that to tell a linked key from a
// pointer file, so damage to small content is ErrCorrupt in List too).
//
// An older Keel cannot read a store this one wrote (it takes every key for
// a pointer file); this one reads every store an older one wrote.
package fs
