-- 0008: the notification outbox (issue #29). A commit that requests an
-- approval or leaves a run in needs_human writes a notification here in
-- the same transaction; a delivery worker claims due ones by bumping
-- attempts. The link token is kept only as its SHA-256 (link_hash).
-- One b-tree, no index of due rows: the table holds one row per approval
-- or needs_human, few beside the steps, and every b-tree is a page of
-- every store (the store-size bound of internal/kernel/harness's bench).
CREATE TABLE notifications (
    run_id          TEXT NOT NULL REFERENCES runs(id),
    id              TEXT NOT NULL,
    kind            TEXT NOT NULL,
    approval_id     TEXT NOT NULL DEFAULT '',
    tool            TEXT NOT NULL DEFAULT '',
    args_hash       TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_at         INTEGER NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    delivered       TEXT NOT NULL DEFAULT '',
    link_hash       TEXT NOT NULL DEFAULT '',
    link_expires_at INTEGER NOT NULL DEFAULT 0,
    link_used_at    INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
