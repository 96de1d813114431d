-- The schema of store/postgres: the same tables as store/sqlite after its
-- migrations, times as Unix nanoseconds (BIGINT, as SQLite keeps them, so
-- that both stores return the same instants) and JSON as the bytes the
-- engine wrote (BYTEA: jsonb would reformat them). Ids sort bytewise
-- (COLLATE "C"), as SQLite's do, so that paging and ordering agree.

-- Workflow versions: runs keep the exact definition they started with.
CREATE TABLE versions (
  version    TEXT COLLATE "C" PRIMARY KEY,
  name       TEXT NOT NULL,
  definition BYTEA NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE runs (
  id          TEXT COLLATE "C" PRIMARY KEY,
  workflow    TEXT COLLATE "C" NOT NULL,
  version     TEXT COLLATE "C" NOT NULL REFERENCES versions(version),
  status      TEXT COLLATE "C" NOT NULL,
  inputs      BYTEA,
  outputs     BYTEA,
  error       BYTEA,
  state       BYTEA,
  parent_id   TEXT COLLATE "C",
  rev         BIGINT NOT NULL,
  event_seq   BIGINT NOT NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL,
  finished_at BIGINT
);
CREATE INDEX runs_created ON runs(created_at DESC, id DESC);
CREATE INDEX runs_workflow_created ON runs(workflow, created_at DESC, id DESC);
CREATE INDEX runs_status_created ON runs(status, created_at DESC, id DESC);
CREATE INDEX runs_parent ON runs(parent_id) WHERE parent_id IS NOT NULL;
-- Purges walk top-level runs by finish time (PurgeRuns).
CREATE INDEX runs_root_finished ON runs(finished_at, id) WHERE parent_id IS NULL;
CREATE INDEX runs_root_workflow_finished ON runs(workflow, finished_at, id) WHERE parent_id IS NULL;
-- Whether a version is still referenced.
CREATE INDEX runs_version ON runs(version);

-- One row per execution (visit) of a step instance; ord is the recording
-- order (the run's revision shifted left by 32 bits plus the position in
-- the commit, set by a step's first record only).
CREATE TABLE steps (
  run_id      TEXT COLLATE "C" NOT NULL,
  key         TEXT COLLATE "C" NOT NULL,
  visit       INTEGER NOT NULL,
  step_id     TEXT NOT NULL,
  status      TEXT NOT NULL,
  output      BYTEA,
  answer      BYTEA,
  error       TEXT,
  attempts    INTEGER NOT NULL,
  started_at  BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  ord         BIGINT NOT NULL,
  PRIMARY KEY (run_id, key, visit)
);

CREATE TABLE attempts (
  run_id      TEXT COLLATE "C" NOT NULL,
  key         TEXT COLLATE "C" NOT NULL,
  visit       INTEGER NOT NULL,
  attempt     INTEGER NOT NULL,
  status      TEXT NOT NULL,
  error       TEXT,
  started_at  BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, key, visit, attempt)
);

CREATE TABLE events (
  run_id  TEXT COLLATE "C" NOT NULL,
  seq     BIGINT NOT NULL,
  type    TEXT NOT NULL,
  step_id TEXT,
  data    BYTEA,
  at      BIGINT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE pauses (
  run_id      TEXT COLLATE "C" NOT NULL,
  seq         BIGINT NOT NULL,
  step_key    TEXT NOT NULL,
  visit       INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  request     BYTEA NOT NULL,
  status      TEXT NOT NULL,
  expires_at  BIGINT NOT NULL,
  created_at  BIGINT NOT NULL,
  answer      BYTEA,
  answered_at BIGINT,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX pauses_open ON pauses(run_id) WHERE status = 'open';

-- Answers get store-wide increasing ids in submission order.
CREATE TABLE answers (
  id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id    TEXT COLLATE "C" NOT NULL,
  pause_seq BIGINT NOT NULL,
  step_key  TEXT NOT NULL,
  value     BYTEA,
  at        BIGINT NOT NULL
);
CREATE INDEX answers_run ON answers(run_id, id);

CREATE TABLE timers (
  run_id  TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C" NOT NULL,
  wake_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX timers_wake ON timers(wake_at);
