-- plan_items and checkpoints become WITHOUT ROWID tables stored in their
-- key's order: a step's commit then writes its plan item into one b-tree
-- instead of a table and its key's index, and its checkpoint into two
-- instead of three — fewer pages to the WAL (and to fsync) per step, and
-- the keys stored once.
CREATE TABLE plan_items_v3 (
    run_id     TEXT NOT NULL REFERENCES runs(id),
    id         TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    tool       TEXT NOT NULL,
    args       BLOB,
    args_hash  TEXT NOT NULL,
    mode       TEXT NOT NULL,
    status     TEXT NOT NULL,
    call_id    TEXT NOT NULL DEFAULT '',
    result_ref TEXT NOT NULL DEFAULT '',
    result     BLOB,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
INSERT INTO plan_items_v3(run_id, id, ord, tool, args, args_hash, mode, status, call_id, result_ref, result, updated_at)
    SELECT run_id, id, ord, tool, args, args_hash, mode, status, call_id, result_ref, result, updated_at FROM plan_items;
DROP TABLE plan_items;
ALTER TABLE plan_items_v3 RENAME TO plan_items;

CREATE TABLE checkpoints_v3 (
    run_id            TEXT NOT NULL REFERENCES runs(id),
    id                TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    parent            TEXT NOT NULL DEFAULT '',
    step              INTEGER NOT NULL DEFAULT 0,
    state             BLOB,
    state_ref         TEXT NOT NULL DEFAULT '',
    state_hash        TEXT NOT NULL DEFAULT '',
    size              INTEGER NOT NULL DEFAULT 0,
    workspace_version TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO checkpoints_v3(run_id, id, seq, parent, step, state, state_ref, state_hash, size, workspace_version, created_at)
    SELECT run_id, id, seq, parent, step, state, state_ref, state_hash, size, workspace_version, created_at FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v3 RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_id ON checkpoints(run_id, id);
