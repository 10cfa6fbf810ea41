-- What the rankers read about a memory's use across sessions (the candidate
-- signals times_injected and times_useful), one row per memory, kept up to
-- date by triggers on session_memories: a ranking reads one row per
-- candidate instead of one per (session, candidate), which grew with every
-- session. `sessions_injected` = SUM(was_injected); `useful` =
-- SUM(MAX(COALESCE(label, relevance_score, 0), 0)) over the memory's rows.
CREATE TABLE memory_usage (
  memory_id          TEXT PRIMARY KEY,
  sessions_injected  INTEGER NOT NULL DEFAULT 0,
  useful             REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO memory_usage (memory_id, sessions_injected, useful)
  SELECT memory_id, SUM(was_injected), SUM(MAX(COALESCE(label, relevance_score, 0), 0))
  FROM session_memories GROUP BY memory_id;

CREATE TRIGGER session_memories_usage_insert AFTER INSERT ON session_memories BEGIN
  INSERT INTO memory_usage (memory_id, sessions_injected, useful)
    VALUES (NEW.memory_id, NEW.was_injected, MAX(COALESCE(NEW.label, NEW.relevance_score, 0), 0))
    ON CONFLICT (memory_id) DO UPDATE SET
      sessions_injected = sessions_injected + excluded.sessions_injected,
      useful = useful + excluded.useful;
END;

CREATE TRIGGER session_memories_usage_update
AFTER UPDATE OF memory_id, was_injected, label, relevance_score ON session_memories BEGIN
  UPDATE memory_usage SET
      sessions_injected = sessions_injected - OLD.was_injected,
      useful = useful - MAX(COALESCE(OLD.label, OLD.relevance_score, 0), 0)
    WHERE memory_id = OLD.memory_id;
  INSERT INTO memory_usage (memory_id, sessions_injected, useful)
    VALUES (NEW.memory_id, NEW.was_injected, MAX(COALESCE(NEW.label, NEW.relevance_score, 0), 0))
    ON CONFLICT (memory_id) DO UPDATE SET
      sessions_injected = sessions_injected + excluded.sessions_injected,
      useful = useful + excluded.useful;
END;

CREATE TRIGGER session_memories_usage_delete AFTER DELETE ON session_memories BEGIN
  UPDATE memory_usage SET
      sessions_injected = sessions_injected - OLD.was_injected,
      useful = useful - MAX(COALESCE(OLD.label, OLD.relevance_score, 0), 0)
    WHERE memory_id = OLD.memory_id;
END;
