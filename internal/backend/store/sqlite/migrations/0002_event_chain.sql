-- The event log becomes a hash chain per run (run.EventHash): each event
-- stores its predecessor's hash and its own, and the run row the head.
-- Events written before this migration keep empty hashes; a run's chain
-- starts at its first event written after it.
ALTER TABLE events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN last_hash TEXT NOT NULL DEFAULT '';
