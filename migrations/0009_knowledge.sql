-- Seed 004's memory model (`shared::knowledge`): the knowledge graph, the
-- observation buffer (staged memories and their conflicts), conversations
-- that are stashed and resumed, session checkpoints, topic-shift decisions
-- with their per-project counters, session summaries, and the dedup
-- pipeline's merge log and queue state. Every row comes from an event
-- (`knowledge.*`, `conversation.*`, `checkpoint.created`, `topic.shift`,
-- `session.summarized`, `memory.merged`, `dedup.checked`); nothing here is
-- written by anything but the apply.

-- Typed, weighted edges between memories (seed 004 "Edge Relationships").
-- One edge per (from, to, relation): a later event for the same triple
-- replaces its strength and origin.
CREATE TABLE knowledge_edges (
  id          TEXT PRIMARY KEY,
  from_id     TEXT NOT NULL,
  to_id       TEXT NOT NULL,
  relation    TEXT NOT NULL,
  strength    REAL NOT NULL,
  origin      TEXT NOT NULL,
  reason      TEXT NOT NULL DEFAULT '',
  created_ms  INTEGER NOT NULL,
  UNIQUE (from_id, to_id, relation)
);
CREATE INDEX knowledge_edges_to ON knowledge_edges(to_id, relation);

-- The observation buffer: memories waiting for a decision (seed 004
-- "Observation Buffer"). `memory_id` is the id the memory gets when it is
-- persisted; `result_id` the memory it ended up in (a merge names the
-- existing one).
CREATE TABLE staged_memories (
  id            TEXT PRIMARY KEY,
  memory_id     TEXT NOT NULL,
  session_key   TEXT,
  project       TEXT,
  content       TEXT NOT NULL,
  type          TEXT NOT NULL,
  importance    REAL NOT NULL,
  tags          TEXT NOT NULL DEFAULT '[]',
  source        TEXT NOT NULL DEFAULT '',
  memory        TEXT NOT NULL,
  status        TEXT NOT NULL,
  conflict_with TEXT,
  similarity    REAL,
  reason        TEXT NOT NULL DEFAULT '',
  resolution    TEXT,
  resolved_by   TEXT,
  result_id     TEXT,
  surfaced      INTEGER NOT NULL DEFAULT 0,
  created_ms    INTEGER NOT NULL,
  updated_ms    INTEGER NOT NULL
);
CREATE INDEX staged_memories_status ON staged_memories(status, created_ms);

-- How often each staged conflict was put before the user in a session.
CREATE TABLE staged_surfaced (
  stage_id     TEXT NOT NULL,
  session_key  TEXT NOT NULL,
  count        INTEGER NOT NULL,
  last_ms      INTEGER NOT NULL,
  PRIMARY KEY (stage_id, session_key)
) WITHOUT ROWID;

-- Conversation threads parked for later (seed 004 `conversations`,
-- `stash_groups`): the part of a session from `started_ms` to `ended_ms`.
CREATE TABLE conversations (
  id                 TEXT PRIMARY KEY,
  session_key        TEXT NOT NULL,
  project            TEXT,
  label              TEXT NOT NULL,
  status             TEXT NOT NULL,
  auto               INTEGER NOT NULL DEFAULT 0,
  score              REAL,
  stash_group        TEXT NOT NULL,
  started_ms         INTEGER NOT NULL,
  ended_ms           INTEGER NOT NULL,
  summary            TEXT NOT NULL DEFAULT '',
  prompts            TEXT NOT NULL DEFAULT '[]',
  files              TEXT NOT NULL DEFAULT '[]',
  resume_count       INTEGER NOT NULL DEFAULT 0,
  resumed_session    TEXT,
  resumed_ms         INTEGER
);
CREATE INDEX conversations_session ON conversations(session_key, ended_ms);
CREATE INDEX conversations_project ON conversations(project, status, ended_ms);

-- Session save points (seed 004 `session_forks`).
CREATE TABLE session_forks (
  id            TEXT PRIMARY KEY,
  session_key   TEXT NOT NULL,
  project       TEXT,
  label         TEXT NOT NULL,
  auto          INTEGER NOT NULL DEFAULT 0,
  trigger       TEXT,
  snapshot      TEXT NOT NULL,
  resume_count  INTEGER NOT NULL DEFAULT 0,
  created_ms    INTEGER NOT NULL
);
CREATE INDEX session_forks_session ON session_forks(session_key, created_ms);

-- One row per topic-shift decision at a prompt. An `ask` stays `pending`
-- until the session stashes (`accepted`) or moves on (`rejected`); a
-- `trust` (auto-stash) becomes `undone` when its conversation is resumed in
-- the same session.
CREATE TABLE topic_shifts (
  event_id        TEXT PRIMARY KEY,
  session_key     TEXT NOT NULL,
  project         TEXT,
  score           REAL NOT NULL,
  tier            TEXT NOT NULL,
  signals         TEXT NOT NULL,
  conversation_id TEXT,
  outcome         TEXT,
  created_ms      INTEGER NOT NULL
);
CREATE INDEX topic_shifts_session ON topic_shifts(session_key, created_ms);

-- Per-project topic-shift counters (seed 004 "Adaptive Thresholds"); the
-- thresholds are computed from them and the configuration when read.
CREATE TABLE adaptive_thresholds (
  project                   TEXT PRIMARY KEY,
  auto_stash_count          INTEGER NOT NULL DEFAULT 0,
  false_positive_count      INTEGER NOT NULL DEFAULT 0,
  suggestion_shown_count    INTEGER NOT NULL DEFAULT 0,
  suggestion_accepted_count INTEGER NOT NULL DEFAULT 0,
  updated_ms                INTEGER NOT NULL
) WITHOUT ROWID;

-- Session summaries (seed 004 "Summarization").
CREATE TABLE session_summaries (
  session_key  TEXT PRIMARY KEY,
  summary      TEXT NOT NULL,
  method       TEXT NOT NULL,
  first_text   TEXT,
  last_text    TEXT,
  files        TEXT NOT NULL DEFAULT '[]',
  tools        TEXT NOT NULL DEFAULT '{}',
  tags         TEXT NOT NULL DEFAULT '[]',
  created_ms   INTEGER NOT NULL
);

-- The dedup pipeline (seed 000 "Dedup Pipeline"): its merge log, and each
-- memory's place in its queue (no row: not yet verified).
CREATE TABLE memory_merges (
  event_id     TEXT PRIMARY KEY,
  survivor_id  TEXT NOT NULL,
  absorbed     TEXT NOT NULL,
  mode         TEXT NOT NULL,
  pass         INTEGER NOT NULL,
  by           TEXT NOT NULL,
  confidence   REAL,
  reason       TEXT NOT NULL DEFAULT '',
  content      TEXT,
  created_ms   INTEGER NOT NULL
);
CREATE INDEX memory_merges_survivor ON memory_merges(survivor_id);
CREATE TABLE dedup_state (
  memory_id   TEXT PRIMARY KEY,
  verified    INTEGER NOT NULL DEFAULT 0,
  attempts    INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT,
  updated_ms  INTEGER NOT NULL
) WITHOUT ROWID;
