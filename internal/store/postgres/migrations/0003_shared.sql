-- What replicas share besides runs (issue 22 item 3): the workflow library
-- (saved workflows and drafts, one entry per kind and name, and the
-- previous versions writes replaced), the server's keys, catalogs and the
-- one-time secret pages. Times are Unix nanoseconds, content the bytes
-- written.

CREATE TABLE library_entries (
  kind     TEXT COLLATE "C" NOT NULL,
  name     TEXT COLLATE "C" NOT NULL,
  ext      TEXT NOT NULL,
  content  BYTEA NOT NULL,
  revision TEXT NOT NULL,
  modified BIGINT NOT NULL,
  PRIMARY KEY (kind, name)
);

CREATE TABLE library_previous (
  id      BIGSERIAL PRIMARY KEY,
  kind    TEXT COLLATE "C" NOT NULL,
  name    TEXT COLLATE "C" NOT NULL,
  ext     TEXT NOT NULL,
  content BYTEA NOT NULL,
  kept_at BIGINT NOT NULL
);
CREATE INDEX library_previous_name ON library_previous (kind, name, id);

-- The server's keys by name ("server": the key pause tokens are signed
-- and secrets sealed with), created once by whichever replica starts first.
CREATE TABLE server_keys (
  name       TEXT COLLATE "C" PRIMARY KEY,
  key        BYTEA NOT NULL,
  created_at BIGINT NOT NULL
);

-- Imported catalogs, the document each was a file of on SQLite homes.
CREATE TABLE catalogs (
  name     TEXT COLLATE "C" PRIMARY KEY,
  document BYTEA NOT NULL,
  modified BIGINT NOT NULL
);

-- One-time secret pages: the random id is the capability; the pause is
-- the engine's view of the question (JSON). given_until is set once the
-- secret was posted (until the pause would have expired), so that a
-- waiter on any replica learns it; a page that ended otherwise is deleted.
CREATE TABLE secret_pages (
  id          TEXT COLLATE "C" PRIMARY KEY,
  token       TEXT COLLATE "C" NOT NULL UNIQUE,
  pause       BYTEA NOT NULL,
  expires_at  BIGINT NOT NULL,
  given_until BIGINT
);

-- Things done once per database, by name ("library-seeded": the first
-- replica imported its home's workflows and drafts).
CREATE TABLE shared_marks (
  name TEXT COLLATE "C" PRIMARY KEY,
  at   BIGINT NOT NULL,
  note TEXT NOT NULL
);
