// Package sqlite is Keel's embedded store: store.Store on one SQLite file,
// through the pure-Go modernc.org/sqlite driver, so `keel dev` needs no cgo,
// no server and no cloud.
//
// Durability and concurrency:
//   - The file is in WAL mode with synchronous=FULL: when a method returns
//     nil, its write is fsync'd. Foreign keys are on.
//   - Writes are group-committed: one writer at a time per Store (the
//     caller that found none running, or a goroutine leading on after it,
//     group.go) takes every write waiting at that moment (at most
//     Options.MaxBatch) and runs them in one transaction, each in a savepoint of its own so that one
//     write's error undoes only that write, then commits them with one fsync.
//     A method returns only after its write's transaction committed, so
//     nil still means durable; concurrent runs share the fsync instead of
//     queueing for one each (WriteStats counts both). Other components
//     writing to the file (the local Step Functions executor) join the same
//     transactions through [Store.WriteTx].
//   - Each transaction begins with BEGIN IMMEDIATE, which takes
//     the file's write lock up front. Two processes on one file therefore
//     queue (busy_timeout, Options.BusyTimeout) instead of deadlocking when
//     both try to upgrade a read lock.
//   - Reads use a separate pool; each statement sees the last committed
//     state. Multi-row reads that must agree with a write (the checks of
//     Commit, Reserve, AcquireLease) run inside the write transaction.
//   - Reserve is a single conditional UPDATE (used + reserved + request <=
//     limit, 0 meaning no limit), so concurrent reservations never overspend.
//
// Schema: versioned migrations embedded from migrations/NNNN_name.sql, each
// applied once in its own transaction and recorded in schema_migrations. A
// file whose schema is newer than the binary is refused. Fields that are
// queried are columns; payloads (args, event data, results, checkpoint
// state) are stored as given. Times are unix nanoseconds, read back in UTC.
// Other components may keep their own tables in the same file through
// [Store.DB], prefixed with their name (sfn_ for the local Step Functions
// executor), and must not touch these.
//
// Encoding (migration 0005, encoding.go): the rows a plain step writes are
// smaller than its records, which read back unchanged. Runs have an integer
// key (rk); events and checkpoints are rowid tables keyed rk << 32 | seq
// (at most 2^32-1 events or checkpoints per run); event types are codes of
// the event_types table (an unlisted type is stored by name); hashes are 32
// bytes; an event's prev_hash is not stored but is the previous row's hash;
// a checkpoint_written whose data is exactly {"bytes","checkpoint_id","seq"}
// of the checkpoint written in the same commit stores that seq and is
// rebuilt from the checkpoint row; a checkpoint's parent that is the
// checkpoint before it is NULL. Events, checkpoints and plan items carry no
// foreign key: they are written only in a transaction that read their run.
//
// Migration 0006 made them smaller again (payload.go, tokens.go): payloads
// are packed — small ones with Keel's own phrases as one byte each, large
// ones deflated with a dictionary of Keel's field names, behind a tag byte
// JSON never starts with, so older rows read as they are; run.NewID-form
// checkpoint and plan item ids are 14 bytes; a state hash of inline state
// and an args hash of stored args are derived on read; plan modes and
// statuses are codes. Only a commit's last event stores its hash (and its
// whole time): the others' hashes and times follow from the event before
// and are derived on read (run.Event.HashDerived), so an edit of any still
// breaks the stored hash at the end of its commit, and the audit names the
// commit's span, which holds the edited event. Options.PageSize
// sets a new file's page size (default SQLite's 4 KiB; pagesize.go says
// when a smaller one pays).
//
// Migration 0007 (cpid.go) keeps fewer b-trees, each at least a page and
// each written page a WAL frame: a checkpoint id of run.NewCheckpointID's
// form naming its own row's seq is stored as 10 bytes and found through
// its row, so the unique index of checkpoint ids (partial) holds only ids
// of other forms and a step's commit no longer writes it; grants is a
// WITHOUT ROWID table and event_types has no second index of its names.
//
// Choices where package store is silent:
//   - CreateRun stores Limits as given (0 = no limit); applying
//     run.DefaultLimits is the caller's policy. An empty input policy is queue.
//   - Event types are checked for shape (lowercase snake case, at most 64
//     bytes), not against a closed list, so a new type needs no change here.
//   - A fencing token is current only while a lease is held with it: after
//     ReleaseLease, or a Commit with RunPatch.ReleaseLease, Commit with the
//     old token is ErrFenced.
//   - ReadEvents and ListCheckpoints treat limit 0 as store.MaxEventsPerPage.
//   - Consuming an input twice is ErrConflict; cancelling an approval that is
//     no longer pending leaves it as it is.
//   - Ids, owners, tools and references are at most 512 bytes.
package sqlite
