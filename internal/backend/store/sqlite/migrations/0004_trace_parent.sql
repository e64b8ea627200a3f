-- The run's W3C trace context (run.Run.TraceParent): every Step's spans
-- join it. Runs created before this migration have none ('').
ALTER TABLE runs ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
