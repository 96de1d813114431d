-- Purging history (PurgeRuns) walks top-level runs by finish time, oldest
-- first (or newest first to spare the newest N), a batch at a time: these
-- indexes let each batch read just its runs instead of sorting every
-- finished run again.
CREATE INDEX runs_root_finished ON runs(finished_at, id) WHERE parent_id IS NULL;
CREATE INDEX runs_root_workflow_finished ON runs(workflow, finished_at, id) WHERE parent_id IS NULL;
-- Whether a version is still referenced: without it, deleting a version
-- (and the foreign key check that comes with it) scans every run.
CREATE INDEX runs_version ON runs(version);
