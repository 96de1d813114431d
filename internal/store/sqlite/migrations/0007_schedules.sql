-- Schedules (issue 27): one row per schedule trigger of a library
-- workflow. next_fire moves forward with a conditional update, so that of
-- the processes sharing the file one fires an instant. Times in Unix
-- nanoseconds (0: none).
CREATE TABLE schedules (
	key        TEXT PRIMARY KEY,
	workflow   TEXT NOT NULL,
	trigger_index INTEGER NOT NULL,
	spec       TEXT NOT NULL,
	next_fire  INTEGER NOT NULL,
	paused     INTEGER NOT NULL DEFAULT 0,
	last_fired INTEGER NOT NULL DEFAULT 0,
	last_run   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX schedules_workflow ON schedules(workflow);
-- Each instant a schedule fired at, once (the primary key refuses a
-- second firing), and the run it started.
CREATE TABLE schedule_firings (
	key    TEXT NOT NULL,
	at     INTEGER NOT NULL,
	run_id TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (key, at)
) WITHOUT ROWID;
-- Webhook delivery ids seen, for replay protection.
CREATE TABLE webhook_deliveries (
	hook    TEXT NOT NULL,
	id      TEXT NOT NULL,
	seen_at INTEGER NOT NULL,
	PRIMARY KEY (hook, id)
) WITHOUT ROWID;
CREATE INDEX webhook_deliveries_seen ON webhook_deliveries(seen_at);
