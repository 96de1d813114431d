-- Workflow versions: runs keep the exact definition they started with.
CREATE TABLE versions (
  version    TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  definition BLOB NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE runs (
  id          TEXT PRIMARY KEY,
  workflow    TEXT NOT NULL,
  version     TEXT NOT NULL REFERENCES versions(version),
  status      TEXT NOT NULL,
  inputs      BLOB,
  outputs     BLOB,
  error       BLOB,
  state       BLOB,
  parent_id   TEXT,
  rev         INTEGER NOT NULL,
  event_seq   INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX runs_created ON runs(created_at DESC, id DESC);
CREATE INDEX runs_workflow_created ON runs(workflow, created_at DESC, id DESC);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX runs_parent ON runs(parent_id) WHERE parent_id IS NOT NULL;

-- One row per execution (visit) of a step instance.
CREATE TABLE steps (
  run_id      TEXT NOT NULL,
  key         TEXT NOT NULL,
  visit       INTEGER NOT NULL,
  step_id     TEXT NOT NULL,
  status      TEXT NOT NULL,
  output      BLOB,
  answer      BLOB,
  error       TEXT,
  attempts    INTEGER NOT NULL,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, visit)
);

CREATE TABLE attempts (
  run_id      TEXT NOT NULL,
  key         TEXT NOT NULL,
  visit       INTEGER NOT NULL,
  attempt     INTEGER NOT NULL,
  status      TEXT NOT NULL,
  error       TEXT,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, visit, attempt)
) WITHOUT ROWID;

CREATE TABLE events (
  run_id  TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  type    TEXT NOT NULL,
  step_id TEXT,
  data    BLOB,
  at      INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE pauses (
  run_id      TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  step_key    TEXT NOT NULL,
  visit       INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  request     BLOB NOT NULL,
  status      TEXT NOT NULL,
  expires_at  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  answer      BLOB,
  answered_at INTEGER,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX pauses_open ON pauses(run_id) WHERE status = 'open';

-- Answers get store-wide increasing ids in submission order.
CREATE TABLE answers (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id    TEXT NOT NULL,
  pause_seq INTEGER NOT NULL,
  step_key  TEXT NOT NULL,
  value     BLOB,
  at        INTEGER NOT NULL
);
CREATE INDEX answers_run ON answers(run_id, id);

CREATE TABLE timers (
  run_id  TEXT NOT NULL,
  key     TEXT NOT NULL,
  wake_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX timers_wake ON timers(wake_at);
