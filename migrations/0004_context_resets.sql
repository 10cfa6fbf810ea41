-- When an agent's context is emptied (a compaction, a cleared session), the
-- memories injected before it are no longer in front of the agent and may be
-- injected again. `sessions.context_reset_ms` is the latest such moment of a
-- session (the `meta` events `compaction`, `pre_compact` and `context_reset`),
-- `session_memories.last_injected_ms` the latest ranking that injected the
-- memory in the session: a memory counts as shown in a session only when it
-- was injected after the session's last reset. NULL in rows of an older
-- schema: injected at an unknown time (shown unless the session was reset).
ALTER TABLE sessions ADD COLUMN context_reset_ms INTEGER;
ALTER TABLE session_memories ADD COLUMN last_injected_ms INTEGER;
