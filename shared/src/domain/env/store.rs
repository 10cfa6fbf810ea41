//! The projection of the environment model (migration 0007): what an
//! `env.detected` event changes, and the project a session or a memory gets.
//!
//! `env.detected` upserts its project in `projects` (the latest name, root,
//! remote and marker; the union of stacks), and, with a session, replaces the
//! session's row in `session_env` (its tags' co-occurrence counts in
//! `env_tags` / `env_tag_pairs` move with it), sets `sessions.project` to the
//! key, and moves the memories learned in that session that still carry a
//! bare folder name (what versions before project detection stored, see
//! [`super::is_key`]) to the key. So a session recorded before detection
//! existed gets its right project as soon as one detection of its working
//! directory is in the log, on replay as well.
//!
//! Two rules keep later events consistent with a detection: a
//! `session.started` does not overwrite the project of a session that has
//! one ([`session_has_env`]), and a memory added with a bare folder name from
//! a session with a detected project gets that project ([`memory_project`]).
//! Everything here reads only the projection, never the file system.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use crate::base::ids::SessionKey;
use crate::storage::event::{EnvDetected, Event};

use super::is_key;

/// Applies `env.detected`: `Ok(Err(why))` when the event's data cannot be
/// applied (it is skipped and recorded), `Err` when the database failed.
pub fn apply_detected(conn: &Connection, event: &Event, b: &EnvDetected) -> rusqlite::Result<Result<(), String>> {
    if b.project.is_empty() {
        return Ok(Err("env.detected without a project".into()));
    }
    let ts = event.ts.0;
    let previous: Option<(String, String)> = match &event.session {
        Some(s) => conn
            .prepare_cached("SELECT project, tags FROM session_env WHERE session_key = ?1")?
            .query_row([s.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
        None => None,
    };
    let new_session = event.session.is_some() && previous.as_ref().is_none_or(|(p, _)| *p != b.project);
    let old_stack: Option<String> = conn
        .prepare_cached("SELECT detected_stack FROM projects WHERE key = ?1")?
        .query_row([&b.project], |r| r.get(0))
        .optional()?;
    let mut stack: BTreeSet<String> = old_stack.as_deref().map(parse_tags).unwrap_or_default().into_iter().collect();
    stack.extend(b.stack.iter().cloned());
    conn.prepare_cached(
        "INSERT INTO projects (key, name, root, remote, marker, detected_stack, session_count, first_seen_ms,
            last_seen_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
         ON CONFLICT(key) DO UPDATE SET
            name = CASE WHEN excluded.last_seen_ms >= last_seen_ms THEN excluded.name ELSE name END,
            root = CASE WHEN excluded.last_seen_ms >= last_seen_ms THEN excluded.root ELSE root END,
            remote = COALESCE(excluded.remote, remote),
            marker = CASE WHEN excluded.last_seen_ms >= last_seen_ms THEN excluded.marker ELSE marker END,
            detected_stack = excluded.detected_stack,
            session_count = session_count + excluded.session_count,
            first_seen_ms = MIN(first_seen_ms, excluded.first_seen_ms),
            last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms)",
    )?
    .execute(params![b.project, b.name, b.root, b.remote, b.marker, tags_json(stack.iter()), new_session, ts])?;
    let Some(session) = &event.session else { return Ok(Ok(())) };
    if let Some((old_project, _)) = &previous
        && *old_project != b.project
    {
        conn.prepare_cached("UPDATE projects SET session_count = MAX(session_count - 1, 0) WHERE key = ?1")?
            .execute([old_project])?;
    }
    let tags: BTreeSet<&str> = b.tags.iter().map(String::as_str).filter(|t| !t.is_empty()).collect();
    let old_tags: Vec<String> = previous.as_ref().map(|(_, t)| parse_tags(t)).unwrap_or_default();
    count_tags(conn, old_tags.iter().map(String::as_str).collect(), -1)?;
    count_tags(conn, tags.clone(), 1)?;
    let mcp: BTreeSet<&str> = b.mcp_servers.iter().map(String::as_str).collect();
    conn.prepare_cached(
        "INSERT INTO session_env (session_key, cwd, project, root, tags, os, mcp_servers, detected_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(session_key) DO UPDATE SET cwd = excluded.cwd, project = excluded.project,
            root = excluded.root, tags = excluded.tags, os = excluded.os, mcp_servers = excluded.mcp_servers,
            detected_ms = excluded.detected_ms",
    )?
    .execute(params![
        session.as_str(),
        b.cwd,
        b.project,
        b.root,
        tags_json(tags.iter()),
        b.os,
        tags_json(mcp),
        ts
    ])?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO sessions (session_key, harness, harness_session_id, started_ms, last_event_ms)
         VALUES (?1, ?2, ?3, ?4, ?4)",
    )?
    .execute(params![session.as_str(), session.harness(), session.harness_id(), ts])?;
    conn.prepare_cached("UPDATE sessions SET project = ?2 WHERE session_key = ?1")?
        .execute(params![session.as_str(), b.project])?;
    conn.prepare_cached(
        "UPDATE memories SET project = ?2
         WHERE source_session = ?1 AND project IS NOT NULL AND instr(project, '/') = 0",
    )?
    .execute(params![session.as_str(), b.project])?;
    let seen: Vec<String> = conn
        .prepare_cached("SELECT memory_id FROM memory_sessions WHERE session_key = ?1")?
        .query_map([session.as_str()], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in seen {
        refresh_memory_env(conn, &id)?;
    }
    Ok(Ok(()))
}

/// Recomputes what a memory's sessions say about where it applies
/// (`memories.env_tags`, `memories.env_projects`): the tags shared by the
/// environments of every session it was learned or seen in that has one, and
/// the number of distinct projects among them. Computed from all of them,
/// so the order the sessions and their detections arrive in does not matter.
pub fn refresh_memory_env(conn: &Connection, memory: &str) -> rusqlite::Result<()> {
    let rows: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT e.project, e.tags FROM memory_sessions ms JOIN session_env e ON e.session_key = ms.session_key
             WHERE ms.memory_id = ?1",
        )?
        .query_map([memory], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut shared: Option<BTreeSet<String>> = None;
    let mut projects = BTreeSet::new();
    for (project, tags) in rows {
        projects.insert(project);
        let tags: BTreeSet<String> = parse_tags(&tags).into_iter().collect();
        shared = Some(match shared {
            None => tags,
            Some(s) => s.intersection(&tags).cloned().collect(),
        });
    }
    conn.prepare_cached("UPDATE memories SET env_tags = ?2, env_projects = ?3 WHERE id = ?1")?.execute(params![
        memory,
        tags_json(shared.unwrap_or_default().iter()),
        projects.len() as i64
    ])?;
    Ok(())
}

/// Adds `delta` to the session counts of `tags` and of each pair of them.
fn count_tags(conn: &Connection, tags: BTreeSet<&str>, delta: i64) -> rusqlite::Result<()> {
    let tags: Vec<&str> = tags.into_iter().collect();
    for (i, a) in tags.iter().enumerate() {
        conn.prepare_cached(
            "INSERT INTO env_tags (tag, sessions) VALUES (?1, ?2)
             ON CONFLICT(tag) DO UPDATE SET sessions = sessions + excluded.sessions",
        )?
        .execute(params![a, delta])?;
        for b in &tags[i + 1..] {
            conn.prepare_cached(
                "INSERT INTO env_tag_pairs (a, b, sessions) VALUES (?1, ?2, ?3)
                 ON CONFLICT(a, b) DO UPDATE SET sessions = sessions + excluded.sessions",
            )?
            .execute(params![a, b, delta])?;
        }
    }
    if delta < 0 {
        conn.prepare_cached("DELETE FROM env_tags WHERE sessions <= 0")?.execute([])?;
        conn.prepare_cached("DELETE FROM env_tag_pairs WHERE sessions <= 0")?.execute([])?;
    }
    Ok(())
}

/// Whether `session` has a detected environment (then its project is the
/// detection's, and a `session.started` keeps it).
pub fn session_has_env(conn: &Connection, session: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM session_env WHERE session_key = ?1")?
        .query_row([session], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

/// The project a new memory gets: as given, except that a bare folder name
/// from a session with a detected project becomes that project's key.
pub fn memory_project(
    conn: &Connection,
    project: Option<&str>,
    source_session: Option<&SessionKey>,
) -> rusqlite::Result<Option<String>> {
    match (project, source_session) {
        (Some(p), Some(s)) if !is_key(p) => {
            Ok(Some(session_project(conn, s.as_str())?.unwrap_or_else(|| p.to_owned())))
        }
        (p, _) => Ok(p.map(str::to_owned)),
    }
}

/// The detected project of a session, if any.
pub fn session_project(conn: &Connection, session: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT project FROM session_env WHERE session_key = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()
}

/// A session recorded without a detected environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undetected {
    /// The session.
    pub session: SessionKey,
    /// Its working directory.
    pub cwd: String,
    /// When it started (ms).
    pub started_ms: i64,
}

/// Sessions that have a working directory but no detected environment (those
/// recorded before detection existed), oldest first.
pub fn sessions_without_env(conn: &Connection) -> rusqlite::Result<Vec<Undetected>> {
    let mut stmt = conn.prepare(
        "SELECT s.session_key, s.cwd, s.started_ms FROM sessions s
         WHERE s.cwd IS NOT NULL AND s.cwd != ''
           AND NOT EXISTS (SELECT 1 FROM session_env e WHERE e.session_key = s.session_key)
         ORDER BY s.started_ms, s.session_key",
    )?;
    let rows = stmt
        .query_map([], |r| Ok(Undetected { session: SessionKey(r.get(0)?), cwd: r.get(1)?, started_ms: r.get(2)? }))?;
    rows.collect()
}

/// Live memories whose project is still a bare folder name (stored by a
/// version before project detection, outside any detected session), with
/// that name.
pub fn memories_with_bare_project(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(
        "SELECT id, project FROM memories
         WHERE is_deleted = 0 AND project IS NOT NULL AND instr(project, '/') = 0 ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// The environment recorded for `session`, as detection found it (the
/// project's name from `projects`).
pub fn session_env_detected(conn: &Connection, session: &str) -> rusqlite::Result<Option<EnvDetected>> {
    conn.prepare_cached(
        "SELECT e.cwd, e.root, e.project, COALESCE(p.name, ''), e.tags, e.os, e.mcp_servers
         FROM session_env e LEFT JOIN projects p ON p.key = e.project WHERE e.session_key = ?1",
    )?
    .query_row([session], |r| {
        Ok(EnvDetected {
            cwd: r.get(0)?,
            root: r.get(1)?,
            project: r.get(2)?,
            name: r.get(3)?,
            tags: parse_tags(&r.get::<_, String>(4)?),
            os: r.get(5)?,
            mcp_servers: parse_tags(&r.get::<_, String>(6)?),
            ..EnvDetected::default()
        })
    })
    .optional()
}

/// Projects `memory.prerequisites_set` (the memory is known to exist).
pub fn apply_prerequisites(
    conn: &Connection,
    b: &crate::storage::event::MemoryPrerequisitesSet,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE memories SET prerequisites = ?2 WHERE id = ?1")?
        .execute(params![b.memory_id.as_str(), b.prerequisites.to_json()])?;
    Ok(())
}

/// A known project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownProject {
    /// Its key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its root as last detected.
    pub root: String,
    /// The union of its detected stacks.
    pub stack: Vec<String>,
}

/// The known project whose root is the nearest ancestor of (or equal to)
/// `dir`: what a directory that no longer exists belonged to.
pub fn project_containing(conn: &Connection, dir: &str) -> rusqlite::Result<Option<KnownProject>> {
    let mut stmt = conn.prepare_cached("SELECT key, name, root, detected_stack FROM projects")?;
    let rows = stmt.query_map([], |r| {
        Ok(KnownProject {
            key: r.get(0)?,
            name: r.get(1)?,
            root: r.get(2)?,
            stack: parse_tags(&r.get::<_, String>(3)?),
        })
    })?;
    let mut best: Option<KnownProject> = None;
    for p in rows {
        let p = p?;
        let root = p.root.trim_end_matches('/');
        let inside = dir == root || root.is_empty() || dir.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'));
        if inside && best.as_ref().is_none_or(|b| b.root.len() < p.root.len()) {
            best = Some(p);
        }
    }
    Ok(best)
}

/// A project by key.
pub fn project(conn: &Connection, key: &str) -> rusqlite::Result<Option<KnownProject>> {
    conn.prepare_cached("SELECT key, name, root, detected_stack FROM projects WHERE key = ?1")?
        .query_row([key], |r| {
            Ok(KnownProject {
                key: r.get(0)?,
                name: r.get(1)?,
                root: r.get(2)?,
                stack: parse_tags(&r.get::<_, String>(3)?),
            })
        })
        .optional()
}

/// The keys of the projects named `name`.
pub fn keys_named(conn: &Connection, name: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT key FROM projects WHERE name = ?1 ORDER BY key")?;
    let rows = stmt.query_map([name], |r| r.get(0))?;
    rows.collect()
}

/// What a person means by a project they name (`memory add --project X`),
/// among the projects the data home knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectLookup {
    /// A known project, named by its key or by a name no other project has.
    Found(KnownProject),
    /// No known project, but memories are filed under exactly this value (a
    /// bare folder name stored before projects were detected).
    Legacy(String),
    /// Several known projects have this name.
    Ambiguous(Vec<KnownProject>),
    /// No known project: the ones whose key or name holds it (any case), or
    /// else every known one; at most [`MAX_CANDIDATES`] either way.
    Unknown(Vec<KnownProject>),
}

/// Most candidates [`lookup_project`] lists.
pub const MAX_CANDIDATES: usize = 20;

fn known_projects(conn: &Connection, filter: &str, arg: &str) -> rusqlite::Result<Vec<KnownProject>> {
    let sql = format!("SELECT key, name, root, detected_stack FROM projects {filter} ORDER BY name, key LIMIT ?2");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![arg, MAX_CANDIDATES as i64], |r| {
        Ok(KnownProject {
            key: r.get(0)?,
            name: r.get(1)?,
            root: r.get(2)?,
            stack: parse_tags(&r.get::<_, String>(3)?),
        })
    })?;
    rows.collect()
}

/// The known project `given` names exactly: its key, or the name of only
/// one (see [`ProjectLookup`]). Nothing is guessed: a name several projects
/// have, or none, is not a project.
pub fn lookup_project(conn: &Connection, given: &str) -> rusqlite::Result<ProjectLookup> {
    let given = given.trim();
    if let Some(p) = project(conn, given)? {
        return Ok(ProjectLookup::Found(p));
    }
    let mut named = known_projects(conn, "WHERE name = ?1", given)?;
    if named.len() == 1 {
        return Ok(ProjectLookup::Found(named.remove(0)));
    }
    if !named.is_empty() {
        return Ok(ProjectLookup::Ambiguous(named));
    }
    let legacy: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE project = ?1)")?
        .query_row([given], |r| r.get(0))?;
    if legacy && !given.is_empty() {
        return Ok(ProjectLookup::Legacy(given.to_owned()));
    }
    let like = format!("%{}%", given.to_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
    let mut near =
        known_projects(conn, "WHERE lower(key) LIKE ?1 ESCAPE '\\' OR lower(name) LIKE ?1 ESCAPE '\\'", &like)?;
    if near.is_empty() || given.is_empty() {
        near = known_projects(conn, "WHERE ?1 = ?1", "")?;
    }
    Ok(ProjectLookup::Unknown(near))
}

/// The key a person or an agent means by `given`: itself when it is a key (or
/// names no known project, or several), else the key of the one project
/// with that name.
pub fn resolve_project(conn: &Connection, given: &str) -> String {
    let given = given.trim();
    if is_key(given) {
        return given.to_owned();
    }
    match keys_named(conn, given) {
        Ok(keys) if keys.len() == 1 => keys.into_iter().next().unwrap_or_default(),
        _ => given.to_owned(),
    }
}

/// A JSON array of tags (as stored).
pub fn tags_json<S: AsRef<str>>(tags: impl IntoIterator<Item = S>) -> String {
    let v: Vec<String> = tags.into_iter().map(|t| t.as_ref().to_owned()).collect();
    serde_json::to_string(&v).unwrap_or_else(|_| "[]".into())
}

/// Tags from their stored JSON array (anything else reads as none).
pub fn parse_tags(json: &str) -> Vec<String> {
    serde_json::from_str(json).unwrap_or_default()
}
