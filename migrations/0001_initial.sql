-- Engram projection, schema 1.
-- Every table here is derived from the tape log and is rebuilt by
-- `engram-ingestor replay`. Where Signet's schema (reference §12, seed 002)
-- names a table or column, the same name is used.

-- Projection bookkeeping: applied_lsn is the last log position applied.
CREATE TABLE engram_state (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Counters kept by the projection (live_memories).
CREATE TABLE engram_counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

-- Ids of non-content events already applied (content events are deduplicated
-- by session_events.event_id). Applying an event twice changes nothing.
CREATE TABLE applied_events (
  event_id TEXT PRIMARY KEY
) WITHOUT ROWID;

-- Events of a kind this build does not know: kept in the log, skipped here.
CREATE TABLE unknown_events (
  event_id TEXT PRIMARY KEY,
  lsn      INTEGER NOT NULL,
  kind     TEXT NOT NULL,
  reason   TEXT NOT NULL
);

-- Events that could not be applied (e.g. referring to an unknown memory).
CREATE TABLE apply_errors (
  event_id TEXT PRIMARY KEY,
  lsn      INTEGER NOT NULL,
  kind     TEXT NOT NULL,
  error    TEXT NOT NULL
);

CREATE TABLE sessions (
  session_key        TEXT PRIMARY KEY,
  harness            TEXT NOT NULL,
  harness_session_id TEXT NOT NULL,
  project            TEXT,
  cwd                TEXT,
  git_branch         TEXT,
  parent_session_key TEXT,
  parent_link        TEXT,
  model              TEXT,
  harness_version    TEXT,
  source_path        TEXT,
  title              TEXT,
  started_ms         INTEGER NOT NULL,
  last_event_ms      INTEGER NOT NULL,
  ended_ms           INTEGER,
  end_reason         TEXT,
  prompt_count       INTEGER NOT NULL DEFAULT 0,
  msg_in_count       INTEGER NOT NULL DEFAULT 0,
  msg_out_count      INTEGER NOT NULL DEFAULT 0,
  tool_call_count    INTEGER NOT NULL DEFAULT 0,
  tool_error_count   INTEGER NOT NULL DEFAULT 0,
  code_read_count    INTEGER NOT NULL DEFAULT 0,
  code_edit_count    INTEGER NOT NULL DEFAULT 0,
  compaction_count   INTEGER NOT NULL DEFAULT 0,
  opaque_count       INTEGER NOT NULL DEFAULT 0,
  event_count        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_project ON sessions(project, started_ms);
CREATE INDEX sessions_parent ON sessions(parent_session_key) WHERE parent_session_key IS NOT NULL;
CREATE INDEX sessions_last_event ON sessions(last_event_ms);

-- Session content: messages, tool calls and results, reads, edits, metadata.
-- `text` is capped (the tape keeps everything); `lsn` is the log position.
CREATE TABLE session_events (
  lsn         INTEGER PRIMARY KEY,
  event_id    TEXT NOT NULL UNIQUE,
  session_key TEXT NOT NULL,
  kind        TEXT NOT NULL,
  ts_ms       INTEGER NOT NULL,
  origin      TEXT,
  tool        TEXT,
  call_id     TEXT,
  file        TEXT,
  is_error    INTEGER NOT NULL DEFAULT 0,
  text        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX session_events_session ON session_events(session_key, lsn);
CREATE INDEX session_events_file ON session_events(file) WHERE file IS NOT NULL;
CREATE VIRTUAL TABLE session_events_fts USING fts5(
  text, content='session_events', content_rowid='lsn', tokenize='unicode61 remove_diacritics 2', detail='column'
);

CREATE TABLE memories (
  id                TEXT PRIMARY KEY,
  content           TEXT NOT NULL,
  type              TEXT NOT NULL,
  importance        REAL NOT NULL,
  project           TEXT,
  tags              TEXT NOT NULL DEFAULT '[]',
  pinned            INTEGER NOT NULL DEFAULT 0,
  source            TEXT NOT NULL DEFAULT '',
  source_session    TEXT,
  source_event      TEXT,
  speaker           TEXT,
  created_at        TEXT NOT NULL,
  created_ms        INTEGER NOT NULL,
  updated_at        TEXT NOT NULL,
  access_count      INTEGER NOT NULL DEFAULT 0,
  last_accessed     TEXT,
  occurrence_count  INTEGER NOT NULL DEFAULT 1,
  is_deleted        INTEGER NOT NULL DEFAULT 0,
  deleted_at        TEXT,
  deprecated        INTEGER NOT NULL DEFAULT 0,
  deprecated_reason TEXT,
  superseded_by     TEXT,
  feedback_count    INTEGER NOT NULL DEFAULT 0,
  feedback_sum      REAL NOT NULL DEFAULT 0,
  has_embedding     INTEGER NOT NULL DEFAULT 0,
  -- ln(importance) + ln(1/0.95)·created_days: ordering by it DESC is ordering by
  -- the baseline effective score importance·0.95^age at any "now".
  decay_key         REAL NOT NULL
);
-- No partial indexes on memories: a partial index makes SQLite re-prepare every
-- statement whose WHERE clause holds a bound variable when the value changes.
CREATE INDEX memories_decay ON memories(is_deleted, decay_key);
CREATE INDEX memories_pinned ON memories(pinned, is_deleted, decay_key);
CREATE INDEX memories_project_decay ON memories(project, is_deleted, decay_key);
CREATE INDEX memories_source_session ON memories(source_session, created_ms, is_deleted);
-- Only the text is indexed (tags reach the rankers through lexical overlap):
-- one column keeps BM25 cheap per matching document.
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, content='memories', content_rowid='rowid', tokenize='porter unicode61'
);
INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);

-- Document frequency of each term over live memories, with the predictor's
-- tokenizer (unique terms per memory): the IDF of the lexical-overlap feature.
CREATE TABLE memory_terms (
  term TEXT PRIMARY KEY,
  df   INTEGER NOT NULL
) WITHOUT ROWID;

-- Sessions a memory was learned from or seen again in.
CREATE TABLE memory_sessions (
  memory_id     TEXT NOT NULL REFERENCES memories(id),
  session_key   TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  PRIMARY KEY (memory_id, session_key)
) WITHOUT ROWID;

CREATE TABLE memory_feedback (
  event_id    TEXT PRIMARY KEY,
  memory_id   TEXT NOT NULL REFERENCES memories(id),
  session_key TEXT,
  relevance   REAL NOT NULL,
  reason      TEXT NOT NULL,
  by          TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX memory_feedback_memory ON memory_feedback(memory_id);

-- Signet's embeddings shape: little-endian f32 blobs with their dimension.
CREATE TABLE embeddings (
  id           TEXT PRIMARY KEY,
  content_hash TEXT NOT NULL,
  vector       BLOB NOT NULL,
  dimensions   INTEGER NOT NULL,
  source_type  TEXT NOT NULL,
  source_id    TEXT NOT NULL,
  chunk_text   TEXT,
  model        TEXT,
  created_at   TEXT NOT NULL,
  UNIQUE (source_type, source_id)
);

-- Every served ranking and all its candidates.
CREATE TABLE rankings (
  ranking_id      TEXT PRIMARY KEY,
  event_id        TEXT NOT NULL,
  session_key     TEXT,
  trigger         TEXT NOT NULL,
  query           TEXT NOT NULL,
  alpha           REAL NOT NULL,
  model_version   INTEGER,
  cold_start      INTEGER NOT NULL,
  project         TEXT,
  served_at       TEXT NOT NULL,
  served_ms       INTEGER NOT NULL,
  candidate_count INTEGER NOT NULL,
  injected_count  INTEGER NOT NULL
);
CREATE INDEX rankings_session ON rankings(session_key, served_ms);

CREATE TABLE ranking_candidates (
  ranking_id      TEXT NOT NULL REFERENCES rankings(ranking_id),
  memory_id       TEXT NOT NULL,
  sources         TEXT NOT NULL,
  baseline_score  REAL NOT NULL,
  baseline_rank   INTEGER NOT NULL,
  predictor_score REAL,
  predictor_rank  INTEGER,
  final_score     REAL NOT NULL,
  rank            INTEGER NOT NULL,
  injected        INTEGER NOT NULL,
  PRIMARY KEY (ranking_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX ranking_candidates_memory ON ranking_candidates(memory_id);

-- Signet's per-session candidate table (migrations 015, 020, 023, 025), one row
-- per (session, memory) across all rankings of the session, plus the final
-- training label and the baseline rank.
CREATE TABLE session_memories (
  id                    TEXT PRIMARY KEY,
  session_key           TEXT NOT NULL,
  memory_id             TEXT NOT NULL,
  source                TEXT NOT NULL,
  effective_score       REAL,
  predictor_score       REAL,
  final_score           REAL NOT NULL,
  rank                  INTEGER NOT NULL,
  was_injected          INTEGER NOT NULL,
  relevance_score       REAL,
  fts_hit_count         INTEGER NOT NULL DEFAULT 0,
  agent_preference      TEXT,
  created_at            TEXT NOT NULL,
  predictor_rank        INTEGER,
  baseline_rank         INTEGER,
  agent_relevance_score REAL,
  agent_feedback_count  INTEGER NOT NULL DEFAULT 0,
  label                 REAL,
  first_ranking_id      TEXT,
  UNIQUE (session_key, memory_id)
);
CREATE INDEX idx_session_memories_session ON session_memories(session_key);
CREATE INDEX idx_session_memories_memory ON session_memories(memory_id);

CREATE TABLE fts_hits (
  event_id    TEXT PRIMARY KEY,
  session_key TEXT,
  ranking_id  TEXT,
  memory_ids  TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  created_ms  INTEGER NOT NULL
);
CREATE INDEX fts_hits_session ON fts_hits(session_key);

-- Signet migration 011 + 015.
CREATE TABLE session_scores (
  id                   TEXT PRIMARY KEY,
  session_key          TEXT NOT NULL,
  project              TEXT,
  harness              TEXT,
  score                REAL NOT NULL,
  memories_recalled    INTEGER,
  memories_used        INTEGER,
  novel_context_count  INTEGER,
  reasoning            TEXT,
  created_at           TEXT NOT NULL,
  confidence           REAL,
  continuity_reasoning TEXT,
  scorer               TEXT,
  created_ms           INTEGER NOT NULL
);
CREATE INDEX idx_session_scores_project ON session_scores(project, created_at);
CREATE INDEX idx_session_scores_session ON session_scores(session_key);

-- Signet migrations 020 + 024, plus exclusion and cold-start bookkeeping.
-- predictor_won is NULL when the session was excluded (seed 002).
CREATE TABLE predictor_comparisons (
  id                        TEXT PRIMARY KEY,
  session_key               TEXT NOT NULL,
  agent_id                  TEXT NOT NULL DEFAULT 'default',
  predictor_ndcg            REAL NOT NULL,
  baseline_ndcg             REAL NOT NULL,
  predictor_won             INTEGER,
  margin                    REAL NOT NULL,
  alpha                     REAL NOT NULL,
  ema_updated               INTEGER NOT NULL DEFAULT 0,
  focal_entity_id           TEXT,
  focal_entity_name         TEXT,
  project                   TEXT,
  candidate_count           INTEGER NOT NULL,
  traversal_count           INTEGER NOT NULL DEFAULT 0,
  constraint_count          INTEGER NOT NULL DEFAULT 0,
  created_at                TEXT NOT NULL,
  scorer_confidence         REAL NOT NULL DEFAULT 0,
  success_rate              REAL NOT NULL DEFAULT 0.5,
  predictor_top_ids         TEXT NOT NULL DEFAULT '[]',
  baseline_top_ids          TEXT NOT NULL DEFAULT '[]',
  relevance_scores          TEXT NOT NULL DEFAULT '{}',
  fts_overlap_score         REAL,
  sessions_after_cold_start INTEGER NOT NULL DEFAULT 0,
  cold_start_exited         INTEGER NOT NULL DEFAULT 0,
  created_ms                INTEGER NOT NULL
);
CREATE INDEX idx_predictor_comparisons_session ON predictor_comparisons(session_key);
CREATE INDEX idx_predictor_comparisons_agent ON predictor_comparisons(agent_id);
CREATE INDEX idx_predictor_comparisons_project ON predictor_comparisons(project);
CREATE INDEX idx_predictor_comparisons_time ON predictor_comparisons(created_ms);

-- Signet migration 020 + seed 002 canary columns, plus gate results.
CREATE TABLE predictor_training_log (
  id                        TEXT PRIMARY KEY,
  agent_id                  TEXT NOT NULL DEFAULT 'default',
  model_version             INTEGER NOT NULL,
  loss                      REAL NOT NULL,
  sample_count              INTEGER NOT NULL,
  duration_ms               INTEGER NOT NULL,
  canary_ndcg               REAL,
  canary_ndcg_delta         REAL,
  canary_score_variance     REAL,
  canary_topk_churn         REAL,
  created_at                TEXT NOT NULL,
  valid_loss                REAL,
  epochs                    INTEGER NOT NULL DEFAULT 0,
  steps                     INTEGER NOT NULL DEFAULT 0,
  canary_serving_ndcg       REAL,
  canary_baseline_ndcg      REAL,
  canary_top5_overlap       REAL,
  canary_sessions           INTEGER NOT NULL DEFAULT 0,
  gates_passed              INTEGER NOT NULL,
  failure                   TEXT,
  checkpoint                TEXT,
  promoted                  INTEGER NOT NULL DEFAULT 0,
  train_validation_failures INTEGER NOT NULL DEFAULT 0,
  drift_resets              INTEGER NOT NULL DEFAULT 0,
  drift_retrain             INTEGER NOT NULL DEFAULT 0,
  created_ms                INTEGER NOT NULL
);
CREATE INDEX idx_predictor_training_agent ON predictor_training_log(agent_id);

CREATE TABLE models (
  model_version INTEGER PRIMARY KEY,
  checkpoint    TEXT NOT NULL,
  run_id        TEXT NOT NULL,
  promoted_at   TEXT NOT NULL,
  promoted_ms   INTEGER NOT NULL
);

CREATE TABLE drift_resets (
  event_id     TEXT PRIMARY KEY,
  success_rate REAL NOT NULL,
  window       INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  created_ms   INTEGER NOT NULL
);

-- How far each harness file has been ingested.
CREATE TABLE ingest_cursors (
  path       TEXT PRIMARY KEY,
  harness    TEXT NOT NULL,
  file_id    TEXT NOT NULL,
  offset     INTEGER NOT NULL,
  size       INTEGER NOT NULL,
  mtime_ms   INTEGER NOT NULL,
  state      TEXT,
  updated_ms INTEGER NOT NULL
);

-- Harness record types kept as opaque events, counted.
CREATE TABLE ingest_diagnostics (
  harness     TEXT NOT NULL,
  record_type TEXT NOT NULL,
  count       INTEGER NOT NULL,
  PRIMARY KEY (harness, record_type)
) WITHOUT ROWID;
