-- 0009: sub-agents as child runs (issue #31). A child run names the run,
-- plan item and operation of the sub-agent call that started it, and its
-- depth below the first run. The index is partial: only child runs have
-- an entry, so a store without sub-agents pays no page for it.
ALTER TABLE runs ADD COLUMN caller_run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN caller_item_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN caller_op_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_caller ON runs(caller_run_id, created_at) WHERE caller_run_id != '';
