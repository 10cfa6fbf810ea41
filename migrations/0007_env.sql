-- The environment model (shared::env; seeds 000, 001 and 004): projects and
-- the environment of each session, from `env.detected` events; match
-- statistics, tag relevance, auto-pin, prerequisites and categories of
-- memories (seed 000 "Database Schema", with its table and column names).
-- Like every table, derived from the tape log.

-- Seed 004 "Project Detection": one row per project key (the normalised git
-- remote, else the repository's or root's path). detected_stack is the union
-- of the stacks detected in it (JSON array, sorted).
CREATE TABLE projects (
  key            TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  root           TEXT NOT NULL,
  remote         TEXT,
  marker         TEXT,
  detected_stack TEXT NOT NULL DEFAULT '[]',
  session_count  INTEGER NOT NULL DEFAULT 0,
  first_seen_ms  INTEGER NOT NULL,
  last_seen_ms   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX projects_name ON projects(name);

-- The environment of each session (its latest detection): Engrammar's
-- session_audit `repo` and `env_tags`.
CREATE TABLE session_env (
  session_key TEXT PRIMARY KEY,
  cwd         TEXT NOT NULL,
  project     TEXT NOT NULL,
  root        TEXT NOT NULL,
  tags        TEXT NOT NULL DEFAULT '[]',
  os          TEXT,
  mcp_servers TEXT NOT NULL DEFAULT '[]',
  detected_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX session_env_project ON session_env(project);

-- How many sessions carry each tag, and each pair of tags (a < b): the
-- co-occurrence that tag affinity compares tags with.
CREATE TABLE env_tags (
  tag      TEXT PRIMARY KEY,
  sessions INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE env_tag_pairs (
  a        TEXT NOT NULL,
  b        TEXT NOT NULL,
  sessions INTEGER NOT NULL,
  PRIMARY KEY (a, b)
) WITHOUT ROWID;

-- Seed 000 `engrams` columns: the global match counter, prerequisites
-- (JSON {tags, repos, os, paths, mcp_servers}; NULL: none) and whether the
-- pin was set by auto-pin (auto-unpin only ever removes those).
ALTER TABLE memories ADD COLUMN times_matched INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN last_matched TEXT;
ALTER TABLE memories ADD COLUMN prerequisites TEXT;
ALTER TABLE memories ADD COLUMN auto_pinned INTEGER NOT NULL DEFAULT 0;
-- What the sessions a memory was learned or seen in say about where it
-- applies: the tags all their environments share (JSON array, sorted) and
-- how many distinct projects they were in.
ALTER TABLE memories ADD COLUMN env_tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE memories ADD COLUMN env_projects INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memories_env_projects ON memories(env_projects, is_deleted);

-- Per-repository match statistics (repo: the project key).
CREATE TABLE engram_repo_stats (
  engram_id     TEXT NOT NULL,
  repo          TEXT NOT NULL,
  times_matched INTEGER NOT NULL DEFAULT 0,
  last_matched  TEXT,
  PRIMARY KEY (engram_id, repo)
) WITHOUT ROWID;

-- Per-tag-set match statistics (tag_set: JSON array, sorted).
CREATE TABLE engram_tag_stats (
  engram_id     TEXT NOT NULL,
  tag_set       TEXT NOT NULL,
  times_matched INTEGER NOT NULL DEFAULT 0,
  last_matched  TEXT,
  PRIMARY KEY (engram_id, tag_set)
) WITHOUT ROWID;

-- Per-tag relevance, EMA-smoothed, with its evidence.
CREATE TABLE engram_tag_relevance (
  engram_id      TEXT NOT NULL,
  tag            TEXT NOT NULL,
  score          REAL NOT NULL DEFAULT 0,
  positive_evals INTEGER NOT NULL DEFAULT 0,
  negative_evals INTEGER NOT NULL DEFAULT 0,
  last_evaluated TEXT,
  PRIMARY KEY (engram_id, tag)
) WITHOUT ROWID;

-- What one session contributed to a memory's statistics, so that a session
-- scored again never counts twice.
CREATE TABLE engram_session_evals (
  engram_id   TEXT NOT NULL,
  session_key TEXT NOT NULL,
  matched     INTEGER NOT NULL DEFAULT 0,
  relevance   REAL,
  PRIMARY KEY (engram_id, session_key)
) WITHOUT ROWID;

-- Seed 001 "categories": the category path tree and multi-category membership.
CREATE TABLE categories (
  path        TEXT PRIMARY KEY,
  description TEXT
) WITHOUT ROWID;
CREATE TABLE engram_categories (
  engram_id     TEXT NOT NULL,
  category_path TEXT NOT NULL,
  PRIMARY KEY (engram_id, category_path)
) WITHOUT ROWID;
CREATE INDEX engram_categories_path ON engram_categories(category_path, engram_id);
