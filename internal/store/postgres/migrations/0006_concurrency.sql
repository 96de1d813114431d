-- Concurrency queues (issue 27): the queue of a run of a workflow with a
-- concurrency limit (NULL key: no limit; '' is the workflow's one queue)
-- and the limit it started with. Admission counts a queue's active runs
-- and picks its oldest queued ones through the index.
ALTER TABLE runs ADD COLUMN concurrency_key TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN concurrency_limit INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_concurrency ON runs (workflow, concurrency_key, status, created_at, id) WHERE concurrency_key IS NOT NULL;
