-- 0006: the rows of a plain step made smaller again (issue #16); the
-- records and what they say are unchanged, only their encoding is
-- (encoding.go, payload.go):
--
-- * Payloads (event data, checkpoint state, plan item args and results)
--   may be stored packed (payload.go): Keel's phrases as one byte each
--   after a 0x02 byte, or deflated with Keel's preset dictionary after a
--   0x01; a payload that itself starts with 0x00, 0x01 or 0x02 is stored
--   after a 0x00 byte. JSON never starts with any, so rows written before
--   stay as they are, except the checkpoint states and plan results (not
--   necessarily JSON) that did start with one: escaped here.
-- * Checkpoint and plan item ids of run.NewID's form ("cp_" / "item_" and
--   28 hex digits) are stored as their 14 bytes, here for every existing
--   row too, so that each id has one stored form and the unique keys hold;
--   so are the plan item ids events name (there only for new rows: nothing
--   looks events up by it).
-- * A checkpoint's state_hash is NULL when it is the hash of its inline
--   state, and a plan item's args_hash when it is ArgsHash of its args:
--   reading derives them. Rows written before keep theirs.
-- * Plan item modes and statuses are small integer codes (encoding.go); a
--   value without a code is stored by name, as every older row is.
--
-- * Only the last event of each commit stores its hash; the others' are
--   derived on read from the one before (an edit of any still breaks the
--   stored one). NULL now means "derived", so the events written before
--   the chain (0002), which had NULL, get an empty BLOB. Such an event's
--   time is the difference from the event before it (a few bytes);
--   reading derives it in order too.
--
-- Columns without a declared type keep whatever type is stored.
CREATE TABLE checkpoints_v6 (
    ck                INTEGER PRIMARY KEY,
    rk                INTEGER NOT NULL,
    id                NOT NULL,
    parent,
    step              INTEGER NOT NULL DEFAULT 0,
    state,
    state_ref         TEXT NOT NULL DEFAULT '',
    state_hash,
    size              INTEGER NOT NULL DEFAULT 0,
    workspace_version TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
);
INSERT INTO checkpoints_v6(ck, rk, id, parent, step, state, state_ref, state_hash, size, workspace_version, created_at)
    SELECT ck, rk,
           CASE WHEN length(id) = 31 AND substr(id, 1, 3) = 'cp_' AND substr(id, 4) = lower(substr(id, 4))
                     AND unhex(substr(id, 4)) IS NOT NULL THEN unhex(substr(id, 4)) ELSE id END,
           CASE WHEN length(parent) = 31 AND substr(parent, 1, 3) = 'cp_' AND substr(parent, 4) = lower(substr(parent, 4))
                     AND unhex(substr(parent, 4)) IS NOT NULL THEN unhex(substr(parent, 4)) ELSE parent END,
           step,
           CASE WHEN substr(CAST(state AS BLOB), 1, 1) IN (x'00', x'01', x'02') THEN x'00' || CAST(state AS BLOB) ELSE state END,
           state_ref, state_hash, size, workspace_version, created_at
    FROM checkpoints ORDER BY ck;
DROP INDEX checkpoints_id;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v6 RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_id ON checkpoints(rk, id);

CREATE TABLE plan_items_v6 (
    rk         INTEGER NOT NULL,
    id         NOT NULL,
    ord        INTEGER NOT NULL,
    tool       TEXT NOT NULL,
    args,
    args_hash,
    mode       NOT NULL,
    status     NOT NULL,
    call_id    TEXT NOT NULL DEFAULT '',
    result_ref TEXT NOT NULL DEFAULT '',
    result,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (rk, id)
) WITHOUT ROWID;
INSERT INTO plan_items_v6(rk, id, ord, tool, args, args_hash, mode, status, call_id, result_ref, result, updated_at)
    SELECT rk,
           CASE WHEN length(id) = 33 AND substr(id, 1, 5) = 'item_' AND substr(id, 6) = lower(substr(id, 6))
                     AND unhex(substr(id, 6)) IS NOT NULL THEN unhex(substr(id, 6)) ELSE id END,
           ord, tool, args, args_hash, mode, status, call_id, result_ref,
           CASE WHEN substr(CAST(result AS BLOB), 1, 1) IN (x'00', x'01', x'02') THEN x'00' || CAST(result AS BLOB) ELSE result END,
           updated_at
    FROM plan_items;
DROP TABLE plan_items;
ALTER TABLE plan_items_v6 RENAME TO plan_items;

UPDATE events SET hash = x'' WHERE hash IS NULL;
