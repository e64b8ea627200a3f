-- 0007: fewer b-trees (issue #16). Every table and index is at least one
-- page, and every commit of a step wrote one page of checkpoints_id as well
-- as the checkpoint's own; the records and what they say are unchanged.
--
-- * A checkpoint id of run.NewCheckpointID's form that names its own row's
--   seq ("cp_", then time, seq and random digits) is stored as the 10 bytes
--   of its time and random digits: the seq is the row's (ck & 0xffffffff),
--   and a lookup by such an id goes straight to its row (encoding.go,
--   cpIDCol). Only ids of any other form are in checkpoints_id, now a
--   partial index. The rk column is gone: it is ck >> 32.
-- * grants is a WITHOUT ROWID table: its primary key was a second b-tree
--   beside the table. event_types loses the UNIQUE of its names (only
--   migrations write it, and Open reads it whole), which was another.
--
-- Every id stored before keeps its form, except one of NewCheckpointID's
-- form that names its own row's seq (an older run.NewID whose random
-- digits happen to), which is stored as 10 bytes like the new ones, so
-- that each id still has one stored form.
DROP INDEX checkpoints_id;
ALTER TABLE checkpoints DROP COLUMN rk;
UPDATE checkpoints SET id = unhex(hex(substr(id, 1, 6)) || hex(substr(id, 11, 4)))
    WHERE typeof(id) = 'blob' AND length(id) = 14 AND hex(substr(id, 7, 4)) = printf('%08X', ck & 4294967295);
CREATE UNIQUE INDEX checkpoints_id ON checkpoints(id, ck >> 32) WHERE typeof(id) != 'blob' OR length(id) != 10;

CREATE TABLE grants_v7 (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    tool        TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    granted_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool)
) WITHOUT ROWID;
INSERT INTO grants_v7 SELECT session_id, tool, approval_id, granted_by, created_at FROM grants;
DROP TABLE grants;
ALTER TABLE grants_v7 RENAME TO grants;

CREATE TABLE event_types_v7 (
    code INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);
INSERT INTO event_types_v7 SELECT code, name FROM event_types;
DROP TABLE event_types;
ALTER TABLE event_types_v7 RENAME TO event_types;
