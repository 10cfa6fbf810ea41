//! Session checkpoints (seed 004 "Checkpoint System", `/checkpoint`): save
//! points of a session (`fork_…`, `checkpoint.created`) holding a snapshot
//! of it (observations so far, its stashed conversations, the last
//! observation and prompt, the files it touched, memories still staged).
//!
//! Made by the user or agent ([`create`]), automatically by the PreToolUse
//! hook before a destructive Bash command ([`destructive`], seed 004's
//! pattern list: `rm -rf`, `git reset --hard`, `git push --force`, `git
//! clean -f`, `git checkout .`, `git restore .`, `drop table` / `drop
//! database`, `truncate`, `format`), and by the observation buffer every
//! `knowledge.buffer.checkpoint_interval` observations. Resuming one
//! ([`resumed`]) gives the session as it stood then.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::domain::knowledge::conversation::{Resumed, context_text, memories_between, resume_command};
use crate::domain::memory::ops::{OpError, OpResult};
use crate::storage::event::{Body, CheckpointCreated, CheckpointSnapshot, origin};
use crate::storage::journal::Journal;
use crate::storage::store::Store;

/// The `trigger` of a checkpoint made by the observation buffer.
pub const BUFFER_TRIGGER: &str = "buffer";

/// Commands that run other commands: skipped to find the real one.
const WRAPPERS: &[&str] = &["sudo", "doas", "nice", "nohup", "time", "command", "exec", "env", "xargs"];

fn unquote(w: &str) -> &str {
    w.trim_matches(|c| c == '"' || c == '\'' || c == '(' || c == ')' || c == '`')
}

/// The destructive pattern (seed 004's list) a shell command matches, if any.
pub fn destructive(command: &str) -> Option<&'static str> {
    let lower = command.to_lowercase();
    // SQL anywhere in the command (psql -c "DROP TABLE …", a heredoc).
    let sql: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
    for pair in sql.windows(2) {
        match pair {
            ["drop", "table"] => return Some("drop table"),
            ["drop", "database"] => return Some("drop database"),
            _ => {}
        }
    }
    for segment in lower.split(['\n', ';', '|', '&']) {
        let mut words: Vec<&str> = segment.split_whitespace().map(unquote).filter(|w| !w.is_empty()).collect();
        while let Some(first) = words.first() {
            if WRAPPERS.contains(first) || (first.contains('=') && !first.starts_with('-')) {
                words.remove(0);
            } else {
                break;
            }
        }
        let Some((cmd, args)) = words.split_first() else { continue };
        let program = cmd.rsplit('/').next().unwrap_or(cmd);
        let short_flags = |wanted: &[char]| {
            let flags: String =
                args.iter().filter(|a| a.starts_with('-') && !a.starts_with("--")).map(|a| &a[1..]).collect();
            wanted.iter().all(|c| flags.contains(*c))
        };
        let has = |w: &str| args.contains(&w);
        match program {
            "rm" if (short_flags(&['r', 'f']) || short_flags(&['R', 'f']))
                || ((has("--recursive") || short_flags(&['r']) || short_flags(&['R']))
                    && (has("--force") || short_flags(&['f']))) =>
            {
                return Some("rm -rf");
            }
            "truncate" => return Some("truncate"),
            "format" | "mkfs" => return Some("format"),
            p if p.starts_with("mkfs.") => return Some("format"),
            "git" => {
                let sub = args.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
                match sub {
                    "reset" if has("--hard") => return Some("git reset --hard"),
                    "push"
                        if has("--force") || has("-f") || args.iter().any(|a| a.starts_with("--force-with-lease")) =>
                    {
                        return Some("git push --force");
                    }
                    "clean" if has("--force") || short_flags(&['f']) => return Some("git clean -f"),
                    "checkout" if has(".") => return Some("git checkout ."),
                    "restore" if has(".") => return Some("git restore ."),
                    _ => {}
                }
            }
            _ => {}
        }
        // `truncate table x` inside a SQL client's argument.
        if sql.contains(&"truncate") && (lower.contains("truncate table") || lower.contains("truncate ")) {
            let sql_client = ["psql", "mysql", "sqlite3", "duckdb", "clickhouse-client"].contains(&program);
            if sql_client {
                return Some("truncate");
            }
        }
    }
    None
}

/// The shell command of a tool call, if it runs one (Claude's `Bash`,
/// Codex's `shell` / `exec_command` / `local_shell`).
pub fn shell_command(tool: &str, input: &serde_json::Value) -> Option<String> {
    if !matches!(tool, "Bash" | "bash" | "shell" | "exec_command" | "local_shell" | "run_shell_command") {
        return None;
    }
    let field = input.get("command").or_else(|| input.get("cmd"))?;
    match field {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => {
            let words: Vec<&str> = parts.iter().filter_map(serde_json::Value::as_str).collect();
            // ["bash", "-lc", "<script>"] runs the script.
            match words.as_slice() {
                [_, flag, script] if flag.starts_with('-') && flag.contains('c') => Some((*script).to_owned()),
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// What a checkpoint of `session` would capture now.
pub fn snapshot(store: &Store, session: &SessionKey) -> Result<CheckpointSnapshot> {
    let conn = store.conn();
    let count: Option<i64> = conn
        .prepare_cached("SELECT tool_call_count FROM sessions WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)).optional())
        .sql("read the session")?;
    let conversation_ids: Vec<String> = conn
        .prepare_cached("SELECT id FROM conversations WHERE session_key = ?1 ORDER BY ended_ms, id")
        .and_then(|mut s| s.query_map([session.as_str()], |r| r.get(0))?.collect())
        .sql("read the session's conversations")?;
    let last_observation_id: Option<String> = conn
        .prepare_cached(
            "SELECT event_id FROM session_events WHERE session_key = ?1 AND kind = 'tool.call' ORDER BY lsn DESC LIMIT 1",
        )
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)).optional())
        .sql("read the last observation")?;
    let last_prompt: Option<String> = conn
        .prepare_cached(
            "SELECT text FROM (
                SELECT ts_ms AS t, text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
                    AND (origin IS NULL OR origin = ?2) AND text != ''
                UNION ALL SELECT served_ms, query FROM rankings WHERE session_key = ?1 AND trigger = 'prompt')
             ORDER BY t DESC LIMIT 1",
        )
        .and_then(|mut s| s.query_row(params![session.as_str(), origin::USER], |r| r.get(0)).optional())
        .sql("read the last prompt")?;
    let files: Vec<String> = conn
        .prepare_cached(
            "SELECT file FROM session_events WHERE session_key = ?1 AND file IS NOT NULL GROUP BY file
             ORDER BY MAX(lsn) DESC LIMIT 20",
        )
        .and_then(|mut s| s.query_map([session.as_str()], |r| r.get(0))?.collect())
        .sql("read the session's files")?;
    let staged: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM staged_memories WHERE status IN ('pending', 'needs_clarification')")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .sql("count staged memories")?;
    Ok(CheckpointSnapshot {
        observation_count: count.unwrap_or(0).max(0) as u64,
        conversation_ids,
        last_observation_id,
        last_prompt: last_prompt.map(|p| super::preview(&crate::storage::redact::redact_text(&p), 300)),
        files,
        staged: staged.max(0) as u64,
    })
}

/// The `checkpoint.created` body; returns its id too.
pub fn body(
    project: Option<String>,
    label: &str,
    auto: bool,
    trigger: Option<String>,
    snapshot: CheckpointSnapshot,
    now: Ts,
) -> (String, Body) {
    let id = crate::base::ids::generate_with_prefix("fork", now);
    let body = Body::CheckpointCreated(CheckpointCreated {
        checkpoint_id: id.clone(),
        label: crate::storage::redact::redact_text(label).into_owned(),
        auto,
        trigger: trigger.map(|t| super::preview(&crate::storage::redact::redact_text(&t), 300)),
        project,
        snapshot,
    });
    (id, body)
}

/// A checkpoint as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointRecord {
    /// Id (`fork_…`).
    pub id: String,
    /// Its session.
    pub session: String,
    /// Project.
    pub project: Option<String>,
    /// Label.
    pub label: String,
    /// Made automatically.
    pub auto: bool,
    /// The command (or `buffer`) that triggered it.
    pub trigger: Option<String>,
    /// The snapshot.
    pub snapshot: CheckpointSnapshot,
    /// Times resumed.
    pub resume_count: i64,
    /// When (RFC 3339).
    pub created_at: String,
    /// When (ms).
    pub created_ms: i64,
}

const COLUMNS: &str = "id, session_key, project, label, auto, trigger, snapshot, resume_count, created_ms";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CheckpointRecord> {
    let snapshot: String = r.get(6)?;
    let created_ms: i64 = r.get(8)?;
    Ok(CheckpointRecord {
        id: r.get(0)?,
        session: r.get(1)?,
        project: r.get(2)?,
        label: r.get(3)?,
        auto: r.get(4)?,
        trigger: r.get(5)?,
        snapshot: serde_json::from_str(&snapshot).unwrap_or_default(),
        resume_count: r.get(7)?,
        created_at: Ts(created_ms).to_rfc3339(),
        created_ms,
    })
}

/// One checkpoint.
pub fn get(store: &Store, id: &str) -> Result<Option<CheckpointRecord>> {
    store
        .conn()
        .prepare_cached(&format!("SELECT {COLUMNS} FROM session_forks WHERE id = ?1"))
        .and_then(|mut s| s.query_row([id], row).optional())
        .sql("read a checkpoint")
}

/// Checkpoints, newest first, of one session or all.
pub fn list(store: &Store, session: Option<&str>, limit: usize) -> Result<Vec<CheckpointRecord>> {
    let mut stmt = store
        .conn()
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM session_forks WHERE (?1 IS NULL OR session_key = ?1)
             ORDER BY created_ms DESC, id DESC LIMIT ?2"
        ))
        .sql("list checkpoints")?;
    let rows = stmt.query_map(params![session, limit.max(1) as i64], row).sql("list checkpoints")?;
    rows.collect::<rusqlite::Result<_>>().sql("list checkpoints")
}

/// What [`create`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Created {
    /// The checkpoint (`fork_…`).
    pub checkpoint_id: String,
    /// Its label.
    pub label: String,
    /// What it captured.
    pub snapshot: CheckpointSnapshot,
}

/// Creates a checkpoint of `session` (by the user or agent).
pub fn create(journal: &mut Journal, session: &SessionKey, label: Option<&str>, now: Ts) -> OpResult<Created> {
    let store_err = |e: crate::base::error::Error| OpError::Store { context: "read the session".into(), source: e };
    let project: Option<String> = journal
        .store()
        .conn()
        .query_row("SELECT project FROM sessions WHERE session_key = ?1", [session.as_str()], |r| r.get(0))
        .optional()
        .map_err(|e| store_err(crate::base::error::Error::sqlite("read the session", e)))?
        .flatten();
    let snap = snapshot(journal.store(), session).map_err(store_err)?;
    let label = label
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map_or_else(|| format!("checkpoint {}", now.to_rfc3339()), str::to_owned);
    let (id, body) = body(project, &label, false, None, snap.clone(), now);
    let e = journal.event(now, Some(session.clone()), body);
    journal
        .append(std::slice::from_ref(&e))
        .map_err(|source| OpError::Store { context: "append to the tape log".into(), source })?;
    Ok(Created { checkpoint_id: id, label, snapshot: snap })
}

/// The auto checkpoint before `command` in `session`, if it is destructive
/// and checkpoints are on; `None` otherwise.
pub fn before_command(
    store: &Store,
    config: &crate::base::config::Config,
    session: &SessionKey,
    project: Option<String>,
    command: &str,
    now: Ts,
) -> Result<Option<Body>> {
    let c = &config.knowledge.checkpoints;
    if !c.enabled || !c.auto_fork_before_destructive {
        return Ok(None);
    }
    let Some(pattern) = destructive(command) else { return Ok(None) };
    let snap = snapshot(store, session)?;
    Ok(Some(body(project, &format!("before {pattern}"), true, Some(command.to_owned()), snap, now).1))
}

/// The observation buffer's checkpoint of `session`, when it has grown by
/// `knowledge.buffer.checkpoint_interval` observations since the last one.
pub fn buffer_due(
    store: &Store,
    config: &crate::base::config::Config,
    session: &SessionKey,
    project: Option<String>,
    now: Ts,
) -> Result<Option<Body>> {
    let every = u64::from(config.knowledge.buffer.checkpoint_interval);
    if every == 0 || !config.knowledge.checkpoints.enabled {
        return Ok(None);
    }
    let snap = snapshot(store, session)?;
    let last: u64 = store
        .conn()
        .prepare_cached(
            "SELECT COALESCE(MAX(json_extract(snapshot, '$.observation_count')), 0) FROM session_forks
             WHERE session_key = ?1 AND trigger = ?2",
        )
        .and_then(|mut s| s.query_row(params![session.as_str(), BUFFER_TRIGGER], |r| r.get::<_, i64>(0)))
        .sql("read the last buffer checkpoint")?
        .max(0) as u64;
    if snap.observation_count < last + every {
        return Ok(None);
    }
    let label = format!("{} observations", snap.observation_count);
    Ok(Some(body(project, &label, true, Some(BUFFER_TRIGGER.to_owned()), snap, now).1))
}

/// The session as it stood at checkpoint `id` (for `memory_resume fork_…`).
pub fn resumed(store: &Store, id: &str) -> Result<Option<Resumed>> {
    let Some(c) = get(store, id)? else { return Ok(None) };
    let key = SessionKey::from(c.session.as_str());
    let row: Option<(String, String, i64)> = store
        .conn()
        .prepare_cached("SELECT harness, harness_session_id, started_ms FROM sessions WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([c.session.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
        .sql("read the session")?;
    let (harness, harness_session_id, started) =
        row.unwrap_or_else(|| (key.harness().to_owned(), key.harness_id().to_owned(), 0));
    let prompts: Vec<String> = store
        .conn()
        .prepare_cached(
            "SELECT text FROM (
                SELECT ts_ms AS t, text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
                    AND (origin IS NULL OR origin = ?3) AND text != '' AND ts_ms <= ?2
                UNION SELECT served_ms, query FROM rankings WHERE session_key = ?1 AND trigger = 'prompt' AND served_ms <= ?2)
             ORDER BY t DESC LIMIT 10",
        )
        .and_then(|mut s| s.query_map(params![c.session, c.created_ms, origin::USER], |r| r.get(0))?.collect())
        .sql("read the checkpoint's prompts")?;
    let mut prompts: Vec<String> = prompts.into_iter().rev().collect();
    prompts.dedup();
    let memories = memories_between(store, &c.session, started, c.created_ms)?;
    let mut summary = format!("{} observations", c.snapshot.observation_count);
    if let Some(t) = &c.trigger {
        summary.push_str(&format!("; made before `{t}`"));
    }
    let mut r = Resumed {
        conversation_id: c.id.clone(),
        kind: "checkpoint",
        label: c.label.clone(),
        session: c.session.clone(),
        resume_command: resume_command(&harness, &harness_session_id),
        harness,
        harness_session_id,
        context: String::new(),
        summary,
        prompts,
        files: c.snapshot.files.clone(),
        memories,
    };
    r.context = context_text(&r, &format!("made {}", c.created_at));
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_patterns_are_found_and_lookalikes_are_not() {
        for (cmd, want) in [
            ("rm -rf build/", "rm -rf"),
            ("cd /tmp && sudo rm -fr ./cache", "rm -rf"),
            ("rm -r -f node_modules", "rm -rf"),
            ("rm --recursive --force dist", "rm -rf"),
            ("/bin/rm -Rf target", "rm -rf"),
            ("git reset --hard HEAD~1", "git reset --hard"),
            ("git push --force origin main", "git push --force"),
            ("git push -f", "git push --force"),
            ("git push --force-with-lease", "git push --force"),
            ("git clean -fdx", "git clean -f"),
            ("git checkout .", "git checkout ."),
            ("git restore .", "git restore ."),
            ("psql -c \"DROP TABLE users\"", "drop table"),
            ("sqlite3 app.db 'drop database x'", "drop database"),
            ("truncate -s 0 app.log", "truncate"),
            ("psql -c 'TRUNCATE TABLE events'", "truncate"),
            ("FOO=1 format /dev/sdb", "format"),
            ("mkfs.ext4 /dev/sdb1", "format"),
        ] {
            assert_eq!(destructive(cmd), Some(want), "{cmd}");
        }
        for cmd in [
            "rm build.log",
            "rm -r empty_dir",
            "git log --format=%H",
            "cargo fmt --all",
            "git push origin main",
            "git checkout main",
            "git restore src/main.rs",
            "echo rm -rf is dangerous > notes.txt",
            "grep -r 'drop' src",
            "ls -la",
        ] {
            assert_eq!(destructive(cmd), None, "{cmd}");
        }
    }

    #[test]
    fn shell_commands_of_both_harnesses() {
        let j = serde_json::json!({"command": "rm -rf x"});
        assert_eq!(shell_command("Bash", &j).as_deref(), Some("rm -rf x"));
        let c = serde_json::json!({"command": ["bash", "-lc", "git reset --hard"]});
        assert_eq!(shell_command("shell", &c).as_deref(), Some("git reset --hard"));
        assert_eq!(shell_command("Read", &j), None);
    }
}
