-- Provenance (seed 003): the evidence index over every tape text, the spans
-- that edits replaced and wrote, lineage edges between them, tombstones of
-- removed code, agents' span links, and what continuation detection needs.
-- Everything here is derived from content events by the apply
-- (`shared::provenance::index`); `lsn` columns are log positions of events
-- in `session_events`. Fingerprints are 47-bit winnowed k-gram hashes
-- (`shared::provenance::fingerprint`); a BLOB of them is a sorted list of
-- 6-byte little-endian values.

-- The evidence index: fingerprint -> content event holding it (each event's
-- fingerprints counted once).
CREATE TABLE prov_postings (
  fp  INTEGER NOT NULL,
  lsn INTEGER NOT NULL,
  PRIMARY KEY (fp, lsn)
) WITHOUT ROWID;

-- One row per `code.edit` with text: the span it replaced (before) and the
-- span it wrote (after), their fingerprints and similarity (Jaccard of the
-- two sets; NULL when a side is empty).
CREATE TABLE prov_spans (
  lsn          INTEGER PRIMARY KEY,
  session_key  TEXT NOT NULL,
  file         TEXT NOT NULL,
  op           TEXT NOT NULL,
  call_id      TEXT,
  before_start INTEGER,
  before_end   INTEGER,
  after_start  INTEGER,
  after_end    INTEGER,
  before_fp    BLOB,
  after_fp     BLOB,
  similarity   REAL,
  ts_ms        INTEGER NOT NULL
);
CREATE INDEX prov_spans_file ON prov_spans(file);
CREATE INDEX prov_spans_call ON prov_spans(session_key, call_id) WHERE call_id IS NOT NULL;

-- Lineage: an older span (`from`) became a newer one (`to`). Raw facts only:
-- `confidence` is fingerprint similarity (1.0 for an agent's link),
-- `location_delta` same | adjacent | moved | absent, `cardinality` 1:1 |
-- 1:N | N:1 (as of the edge's creation), `agent_link` for `span.link`.
-- `class` is `lineage` (confidence >= 0.30 or an agent link) or
-- `location_only` (kept for forensics, never traversed by default).
CREATE TABLE prov_edges (
  to_lsn         INTEGER NOT NULL,
  to_side        TEXT NOT NULL,
  from_lsn       INTEGER NOT NULL,
  from_side      TEXT NOT NULL,
  confidence     REAL NOT NULL,
  location_delta TEXT NOT NULL,
  cardinality    TEXT NOT NULL,
  agent_link     INTEGER NOT NULL,
  class          TEXT NOT NULL,
  note           TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (to_lsn, to_side, from_lsn, from_side)
) WITHOUT ROWID;
CREATE INDEX prov_edges_from ON prov_edges(from_lsn, from_side);

-- Code removed by an edit (its text did not survive at that place: deleted,
-- or replaced by text less similar than the link threshold). Never erased.
-- The removed span's fingerprints are prov_spans.before_fp of the same lsn.
CREATE TABLE prov_tombstones (
  lsn         INTEGER PRIMARY KEY,
  session_key TEXT NOT NULL,
  file        TEXT NOT NULL,
  start_line  INTEGER,
  end_line    INTEGER,
  ts_ms       INTEGER NOT NULL
);
CREATE INDEX prov_tombstones_file ON prov_tombstones(file);

-- Agents' `span.link` events as declared.
CREATE TABLE prov_links (
  lsn         INTEGER PRIMARY KEY,
  session_key TEXT NOT NULL,
  from_file   TEXT NOT NULL,
  from_start  INTEGER,
  from_end    INTEGER,
  to_file     TEXT NOT NULL,
  to_start    INTEGER,
  to_end      INTEGER,
  note        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX prov_links_to ON prov_links(to_file);

-- Per session: the fingerprints of its first messages (continuation
-- detection compares them with earlier sessions' last ones), how many
-- messages they came from, and whether one was a compaction summary.
CREATE TABLE prov_sessions (
  session_key TEXT PRIMARY KEY,
  head        BLOB NOT NULL DEFAULT x'',
  head_events INTEGER NOT NULL DEFAULT 0,
  compaction  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Per harness: fingerprints of the scaffolding it injects into every
-- session (system and developer instructions, AGENTS.md/CLAUDE.md, hook
-- context), excluded from continuation matching. Bounded per harness.
CREATE TABLE prov_boilerplate (
  harness TEXT NOT NULL,
  fp      INTEGER NOT NULL,
  PRIMARY KEY (harness, fp)
) WITHOUT ROWID;

-- Notes put into a session before an edit ("why this code exists"): one per
-- session, source session and file (`''` when none), never repeated.
CREATE TABLE prov_notes (
  session_key    TEXT NOT NULL,
  source_session TEXT NOT NULL,
  file           TEXT NOT NULL,
  ts_ms          INTEGER NOT NULL,
  PRIMARY KEY (session_key, source_session, file)
) WITHOUT ROWID;

-- Events applied before this migration have no fingerprints: `explain`
-- says so until `engram-ingestor replay` rebuilds the projection.
INSERT INTO engram_state (key, value)
  SELECT 'provenance_from_lsn', COALESCE((SELECT value FROM engram_state WHERE key = 'applied_lsn'), '0');
INSERT INTO engram_state (key, value) VALUES ('provenance_version', '1');
