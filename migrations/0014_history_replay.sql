-- Recorded sessions replayed through the read side (`history.replayed`):
-- derived rankings with their labels, kept apart from the served ones
-- (`rankings`) so that they count in no α, success rate or comparison.
CREATE TABLE replayed_sessions (
  session_key  TEXT PRIMARY KEY,
  event_id     TEXT NOT NULL,
  replayer     TEXT NOT NULL,
  project      TEXT,
  started_ms   INTEGER NOT NULL,
  moments      INTEGER NOT NULL,
  ranked       INTEGER NOT NULL,
  lists        INTEGER NOT NULL,
  told_twice   TEXT NOT NULL DEFAULT '[]',
  confidence   REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE replayed_lists (
  session_key  TEXT NOT NULL,
  idx          INTEGER NOT NULL,
  project      TEXT,
  trigger      TEXT NOT NULL,
  query        TEXT NOT NULL,
  at_ms        INTEGER NOT NULL,
  memory_ids   TEXT NOT NULL,
  injected     INTEGER NOT NULL,
  labels       TEXT NOT NULL,
  source       TEXT NOT NULL,
  weight       REAL NOT NULL,
  PRIMARY KEY (session_key, idx)
) WITHOUT ROWID;
