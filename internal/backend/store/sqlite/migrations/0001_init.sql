-- 0001: the records of internal/kernel/run. Times are INTEGER unix nanoseconds (0 =
-- unset). Queried fields are columns; opaque payloads (args, data, results,
-- state) are BLOBs of JSON or bytes. Child rows are keyed (run_id, id) so a
-- run's records sit together in the b-tree.

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE runs (
    id                  TEXT PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id),
    owner               TEXT NOT NULL,
    agent               TEXT NOT NULL DEFAULT '',
    client_key          TEXT,            -- NULL when none, so the unique index ignores it
    request             TEXT NOT NULL DEFAULT '',
    command             TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL,
    output              TEXT NOT NULL DEFAULT '',
    error               TEXT NOT NULL DEFAULT '',
    input_policy        TEXT NOT NULL,
    max_steps           INTEGER NOT NULL DEFAULT 0,
    max_tool_calls      INTEGER NOT NULL DEFAULT 0,
    max_tokens          INTEGER NOT NULL DEFAULT 0,
    max_spend           INTEGER NOT NULL DEFAULT 0,
    deadline            INTEGER NOT NULL DEFAULT 0,
    tokens_used         INTEGER NOT NULL DEFAULT 0,
    tokens_reserved     INTEGER NOT NULL DEFAULT 0,
    spend_used          INTEGER NOT NULL DEFAULT 0,
    spend_reserved      INTEGER NOT NULL DEFAULT 0,
    tool_calls_used     INTEGER NOT NULL DEFAULT 0,
    tool_calls_reserved INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT NOT NULL DEFAULT '',
    lease_token         INTEGER NOT NULL DEFAULT 0,
    lease_expiry        INTEGER NOT NULL DEFAULT 0,
    cancel_requested    INTEGER NOT NULL DEFAULT 0,
    step_count          INTEGER NOT NULL DEFAULT 0,
    checkpoint_id       TEXT NOT NULL DEFAULT '',
    last_seq            INTEGER NOT NULL DEFAULT 0,
    parent_run_id       TEXT NOT NULL DEFAULT '',
    fork_checkpoint_id  TEXT NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE UNIQUE INDEX runs_client_key ON runs(owner, client_key) WHERE client_key IS NOT NULL;
CREATE INDEX runs_created ON runs(created_at DESC, id DESC);
CREATE INDEX runs_owner_created ON runs(owner, created_at DESC, id DESC);
CREATE INDEX runs_status_created ON runs(status, created_at DESC, id DESC);
CREATE INDEX runs_session_created ON runs(session_id, created_at DESC, id DESC);

CREATE TABLE events (
    run_id       TEXT NOT NULL REFERENCES runs(id),
    seq          INTEGER NOT NULL,
    type         TEXT NOT NULL,
    time         INTEGER NOT NULL,
    plan_item_id TEXT NOT NULL DEFAULT '',
    operation_id TEXT NOT NULL DEFAULT '',
    data         BLOB,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
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
    PRIMARY KEY (run_id, id)
);
CREATE UNIQUE INDEX checkpoints_seq ON checkpoints(run_id, seq);

CREATE TABLE plan_items (
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
);

CREATE TABLE operations (
    run_id          TEXT NOT NULL REFERENCES runs(id),
    id              TEXT NOT NULL,
    plan_item_id    TEXT NOT NULL DEFAULT '',
    tool            TEXT NOT NULL DEFAULT '',
    destination     TEXT NOT NULL DEFAULT '',
    args            BLOB,
    args_hash       TEXT NOT NULL,
    artifact_hash   TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT NOT NULL,
    status          TEXT NOT NULL,
    external_id     TEXT NOT NULL DEFAULT '',
    result          BLOB,
    error           TEXT NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE INDEX operations_pending ON operations(run_id, status);

CREATE TABLE approvals (
    run_id       TEXT NOT NULL REFERENCES runs(id),
    id           TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    plan_item_id TEXT NOT NULL DEFAULT '',
    tool         TEXT NOT NULL,
    mode         TEXT NOT NULL,
    args         BLOB,
    args_hash    TEXT NOT NULL,
    status       TEXT NOT NULL,
    decided_by   TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    task_token   TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    decided_at   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, id)
);

CREATE TABLE grants (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    tool        TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    granted_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool)
);

CREATE TABLE inputs (
    run_id      TEXT NOT NULL REFERENCES runs(id),
    id          TEXT NOT NULL,
    text        TEXT NOT NULL,
    consumed    INTEGER NOT NULL DEFAULT 0,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
