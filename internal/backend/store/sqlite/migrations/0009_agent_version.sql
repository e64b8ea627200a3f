-- The agent version a run was created under (run.Run.AgentVersion, package
-- agentver). Runs created before this migration have none ('').
ALTER TABLE runs ADD COLUMN agent_version TEXT NOT NULL DEFAULT '';
