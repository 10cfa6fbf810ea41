-- What the rankers read about a memory's use across sessions (the candidate
-- signals times_injected and times_useful), one row per memory: a ranking
-- reads one row per candidate instead of one per (session, candidate), which
-- grew with every session. `sessions_injected` = SUM(was_injected) and
-- `useful` = SUM(MAX(COALESCE(label, relevance_score, 0), 0)) over the
-- memory's session_memories rows; the projection's apply adds each change of
-- a row's contribution (a memory that never contributed has no row).
CREATE TABLE memory_usage (
  memory_id          TEXT PRIMARY KEY,
  sessions_injected  INTEGER NOT NULL DEFAULT 0,
  useful             REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO memory_usage (memory_id, sessions_injected, useful)
  SELECT memory_id, SUM(was_injected), SUM(MAX(COALESCE(label, relevance_score, 0), 0))
  FROM session_memories GROUP BY memory_id
  HAVING SUM(was_injected) != 0 OR SUM(MAX(COALESCE(label, relevance_score, 0), 0)) != 0;
