-- Engrammar's `session_audit` (seed 000 "Database Schema", written at each
-- turn by its per-turn pipeline): per session, what was shown to the agent,
-- the environment it ran in and the transcript it was read from, with how
-- far the transcript has been read. Every part is already a projection of
-- events (`sessions`, `session_env`, `session_memories`, `ingest_cursors`),
-- so the audit is a view over them: replay restores it with them, and it
-- can never disagree with them.
CREATE VIEW session_audit AS
SELECT
  s.session_key,
  s.harness,
  s.source_path                           AS transcript_path,
  c.offset                                AS transcript_offset,
  c.size                                  AS transcript_size,
  COALESCE(e.project, s.project)          AS repo,
  COALESCE(e.tags, '[]')                  AS env_tags,
  (SELECT json_group_array(memory_id) FROM (
     SELECT sm.memory_id FROM session_memories sm
     WHERE sm.session_key = s.session_key AND sm.was_injected = 1
     ORDER BY sm.created_at, sm.memory_id)) AS shown_engram_ids,
  s.started_ms,
  s.last_event_ms
FROM sessions s
LEFT JOIN session_env e ON e.session_key = s.session_key
LEFT JOIN ingest_cursors c ON c.path = s.source_path;
