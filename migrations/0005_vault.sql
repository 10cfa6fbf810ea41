-- vault (issue 21, issue 15 item 3).
--
-- What was forgotten, as keyed fingerprints of its texts (never the text):
-- a memory write whose text has one is dropped (shared::forget::Guard).
CREATE TABLE forgotten_fingerprints (
  fingerprint TEXT PRIMARY KEY,
  memory_id   TEXT NOT NULL
);

-- Tape streams of other writers applied into this projection (team sharing
-- through git): `no` numbers them in the order this log imported them (the
-- local stream is 0 and is not listed); `lsn` is how far each is applied.
CREATE TABLE tape_streams (
  no     INTEGER PRIMARY KEY,
  stream TEXT NOT NULL UNIQUE,
  lsn    INTEGER NOT NULL DEFAULT 0
);
