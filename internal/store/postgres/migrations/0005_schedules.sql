-- Schedules (issue 27): one row per schedule trigger of a library
-- workflow. next_fire moves forward with a conditional update, so that of
-- the replicas sharing the database one fires an instant. Times in Unix
-- nanoseconds (0: none).
CREATE TABLE schedules (
	key        TEXT COLLATE "C" PRIMARY KEY,
	workflow   TEXT NOT NULL,
	trigger_index INTEGER NOT NULL,
	spec       TEXT NOT NULL,
	next_fire  BIGINT NOT NULL,
	paused     BOOLEAN NOT NULL DEFAULT false,
	last_fired BIGINT NOT NULL DEFAULT 0,
	last_run   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX schedules_workflow ON schedules(workflow);
-- Each instant a schedule fired at, once (the primary key refuses a
-- second firing), and the run it started.
CREATE TABLE schedule_firings (
	key    TEXT NOT NULL,
	at     BIGINT NOT NULL,
	run_id TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (key, at)
);
-- Webhook delivery ids seen, for replay protection.
CREATE TABLE webhook_deliveries (
	hook    TEXT NOT NULL,
	id      TEXT NOT NULL,
	seen_at BIGINT NOT NULL,
	PRIMARY KEY (hook, id)
);
CREATE INDEX webhook_deliveries_seen ON webhook_deliveries(seen_at);
