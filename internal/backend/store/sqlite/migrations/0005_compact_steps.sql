-- 0005: the rows a plain step writes, made small (issue #16). The records
-- and what they say are unchanged; only their encoding is:
--
-- * runs get a stable integer key (rk); events, checkpoints and plan_items
--   are keyed by it instead of the 34-character run id. Events and
--   checkpoints are rowid tables whose key is rk << 32 | seq: appends fill
--   their pages (an index b-tree splits them half full), and the key is
--   stored once.
-- * An event's type is a small integer from event_types (a type missing
--   there is stored as its name); its hash is 32 bytes, not 64 hex digits;
--   its prev_hash is no longer stored: it is the hash of the row before
--   (run.EventHash still covers it, and reading derives it).
-- * A checkpoint_written event whose data is exactly what its checkpoint
--   row says ({"bytes","checkpoint_id","seq"}) stores that checkpoint's seq
--   (an INTEGER) as its data; reading rebuilds the bytes from the row.
-- * A checkpoint's parent is NULL when it is the checkpoint before it
--   (seq - 1), as it is for every step of a run; reading derives it.
-- * Checkpoint state hashes and plan item args hashes are 32-byte BLOBs
--   when they have the standard form (64 lowercase hex digits, "jcs:"
--   before them for args); any other form stays TEXT as it was.
-- Columns left without a declared type keep whatever type is stored.
ALTER TABLE runs ADD COLUMN rk INTEGER;
UPDATE runs SET rk = rowid;
CREATE UNIQUE INDEX runs_rk ON runs(rk);

-- Codes are never reused or renumbered; new types get the next one.
CREATE TABLE event_types (
    code INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
INSERT INTO event_types(code, name) VALUES
    (1, 'run_created'),
    (2, 'turn_started'),
    (3, 'model_call_started'),
    (4, 'model_call_completed'),
    (5, 'model_call_failed'),
    (6, 'tool_started'),
    (7, 'tool_progress'),
    (8, 'tool_completed'),
    (9, 'tool_failed'),
    (10, 'approval_requested'),
    (11, 'approval_granted'),
    (12, 'approval_denied'),
    (13, 'approval_cancelled'),
    (14, 'op_intent'),
    (15, 'op_succeeded'),
    (16, 'op_failed'),
    (17, 'op_reconciled'),
    (18, 'op_needs_human'),
    (19, 'op_uncertain'),
    (20, 'checkpoint_written'),
    (21, 'lease_acquired'),
    (22, 'lease_lost'),
    (23, 'budget_reserved'),
    (24, 'budget_exceeded'),
    (25, 'input_received'),
    (26, 'cancel_requested'),
    (27, 'run_spilled'),
    (28, 'run_forked'),
    (29, 'turn_completed'),
    (30, 'run_completed'),
    (31, 'run_failed'),
    (32, 'run_cancelled'),
    (33, 'run_needs_human'),
    (34, 'rate_limited'),
    (35, 'run_swept');

CREATE TABLE events_v5 (
    ek           INTEGER PRIMARY KEY, -- runs.rk << 32 | seq
    type         NOT NULL,            -- event_types.code, or the name
    time         INTEGER NOT NULL,
    plan_item_id TEXT NOT NULL DEFAULT '',
    operation_id TEXT NOT NULL DEFAULT '',
    data,                             -- BLOB, or INTEGER: a checkpoint's seq
    hash         BLOB                 -- NULL: written before the chain (0002)
);
INSERT INTO events_v5(ek, type, time, plan_item_id, operation_id, data, hash)
    SELECT (r.rk << 32) + e.seq, COALESCE(t.code, e.type), e.time, e.plan_item_id, e.operation_id, e.data,
           CASE WHEN e.hash = '' THEN NULL ELSE unhex(e.hash) END
    FROM events e JOIN runs r ON r.id = e.run_id LEFT JOIN event_types t ON t.name = e.type
    ORDER BY 1;
DROP TABLE events;
ALTER TABLE events_v5 RENAME TO events;

CREATE TABLE checkpoints_v5 (
    ck                INTEGER PRIMARY KEY, -- runs.rk << 32 | seq
    rk                INTEGER NOT NULL,
    id                TEXT NOT NULL,
    parent            TEXT,                -- NULL: the checkpoint at seq - 1
    step              INTEGER NOT NULL DEFAULT 0,
    state             BLOB,
    state_ref         TEXT NOT NULL DEFAULT '',
    state_hash        NOT NULL DEFAULT '',
    size              INTEGER NOT NULL DEFAULT 0,
    workspace_version TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
);
INSERT INTO checkpoints_v5(ck, rk, id, parent, step, state, state_ref, state_hash, size, workspace_version, created_at)
    SELECT (r.rk << 32) + c.seq, r.rk, c.id,
           CASE WHEN c.parent = (SELECT p.id FROM checkpoints p WHERE p.run_id = c.run_id AND p.seq = c.seq - 1)
                THEN NULL ELSE c.parent END,
           c.step, c.state, c.state_ref,
           CASE WHEN length(c.state_hash) = 64 AND c.state_hash = lower(c.state_hash) AND unhex(c.state_hash) IS NOT NULL
                THEN unhex(c.state_hash) ELSE c.state_hash END,
           c.size, c.workspace_version, c.created_at
    FROM checkpoints c JOIN runs r ON r.id = c.run_id
    ORDER BY 1;
DROP INDEX checkpoints_id;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v5 RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_id ON checkpoints(rk, id);

CREATE TABLE plan_items_v5 (
    rk         INTEGER NOT NULL,
    id         TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    tool       TEXT NOT NULL,
    args       BLOB,
    args_hash  NOT NULL,
    mode       TEXT NOT NULL,
    status     TEXT NOT NULL,
    call_id    TEXT NOT NULL DEFAULT '',
    result_ref TEXT NOT NULL DEFAULT '',
    result     BLOB,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (rk, id)
) WITHOUT ROWID;
INSERT INTO plan_items_v5(rk, id, ord, tool, args, args_hash, mode, status, call_id, result_ref, result, updated_at)
    SELECT r.rk, p.id, p.ord, p.tool, p.args,
           CASE WHEN length(p.args_hash) = 68 AND substr(p.args_hash, 1, 4) = 'jcs:'
                     AND substr(p.args_hash, 5) = lower(substr(p.args_hash, 5)) AND unhex(substr(p.args_hash, 5)) IS NOT NULL
                THEN unhex(substr(p.args_hash, 5)) ELSE p.args_hash END,
           p.mode, p.status, p.call_id, p.result_ref, p.result, p.updated_at
    FROM plan_items p JOIN runs r ON r.id = p.run_id;
DROP TABLE plan_items;
ALTER TABLE plan_items_v5 RENAME TO plan_items;
