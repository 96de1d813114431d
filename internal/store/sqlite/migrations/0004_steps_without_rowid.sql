-- Steps become a WITHOUT ROWID table clustered on their key: a rowid table
-- with a composite primary key keeps a second b-tree (the key's index), so
-- every recorded step dirtied two pages, the table's and the index's. The
-- recording order that the rowid gave is kept in ord: existing rows take
-- their rowid, new rows the run's revision shifted left by 32 bits plus
-- their position in the commit (see statements.go), which is above every
-- rowid and increases with every commit of the run. The numbers 0004_ are
-- left to the read path's migrations.
CREATE TABLE steps_0005 (
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
  ord         INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, visit)
) WITHOUT ROWID;
INSERT INTO steps_0005 (run_id, key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at, ord)
  SELECT run_id, key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at, rowid FROM steps;
DROP TABLE steps;
ALTER TABLE steps_0005 RENAME TO steps;
