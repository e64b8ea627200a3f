-- 0009: sub-agents as child runs (issue #31). A child run names the run,
-- plan item and operation of the sub-agent call that started it, and its
-- depth below the first run. No index: listing a run's children is rare
-- (`keel runs --parent`), and every b-tree is a page of every store (the
-- store-size bound of internal/kernel/harness's bench).
ALTER TABLE runs ADD COLUMN caller_run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN caller_item_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN caller_op_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
