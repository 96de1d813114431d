-- run_list filtered by status reads runs newest first: with this index it
-- walks them in order and stops at the page size, instead of sorting every
-- run of that status (100 ms at 100,000 runs).
DROP INDEX IF EXISTS runs_status;
CREATE INDEX runs_status_created ON runs(status, created_at DESC, id DESC);
