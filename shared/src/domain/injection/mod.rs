//! What Engram puts into an agent's context, and why: the query of each
//! moment, the ranking, and the injected text. The read-side hooks, the MCP
//! server, `engram-scorer context` and the ingestor's first run all go
//! through [`serve`], so what a person previews is what an agent gets.
//!
//! **Queries** (design.md "The query"). At a prompt, the prompt's text. At
//! session start, [`SessionContext::query`]: the project name, working
//! directory and git branch, then the last prompts and the files of the
//! previous session in the same project, from the projection. Before a tool,
//! [`tool_query`]: the tool's name and its salient input (path, command,
//! pattern, URL…).
//!
//! **Injected text** ([`format_context`]): wrapped in [`INJECTION_OPEN`] /
//! [`INJECTION_CLOSE`] (the ingestor never learns from what is inside), the
//! predictor's one-line status at session start, one header line naming the
//! session (so the agent can pass it to `memory_feedback`), then one line per
//! memory: `- <id> [<type>] <text>`. The whole text never exceeds
//! `injection.max_chars` characters: the ranking's budget is reduced by the
//! frame's size, and any memory that would still overflow is dropped and
//! recorded as not injected.

use std::fmt::Write as _;

use predictor::model::Model;
use rusqlite::OptionalExtension;
use serde::Serialize;
use serde_json::Value;

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::paths::Paths;
use crate::base::time::Ts;
use crate::domain::rank::{self, RankRequest, RankedMemory, Ranking, ServingModel};
use crate::storage::event::{INJECTION_CLOSE, INJECTION_OPEN, trigger};
use crate::storage::store::Store;

pub mod evidence;
pub mod gate;
pub mod remind;
pub mod stack;

/// Previous-session prompts put into the session-start query.
const PREVIOUS_PROMPTS: usize = 3;
/// Previous-session files put into the session-start query.
const PREVIOUS_FILES: usize = 8;
/// Characters of one previous prompt kept in the query.
const PROMPT_CHARS: usize = 300;
/// Characters of a tool's salient input kept in the query.
const TOOL_ARG_CHARS: usize = 300;
/// Tool input fields that say what a tool is pointed at.
const SALIENT_ARGS: &[&str] =
    &["file_path", "path", "filePath", "notebook_path", "command", "cmd", "pattern", "query", "url"];

/// What is known before the first prompt of a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionContext {
    /// The project's key (`shared::domain::env`).
    pub project: Option<String>,
    /// The project's name, which the query names (the key when unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The environment's tags (`shared::domain::env`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch.
    pub branch: Option<String>,
    /// The previous session in the same project, if any.
    pub previous: Option<PreviousSession>,
}

/// The previous session of a project, as the session-start query uses it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PreviousSession {
    /// Its key.
    pub key: String,
    /// When it last had content (ms).
    pub last_event_ms: i64,
    /// Its last user prompts, newest first.
    pub prompts: Vec<String>,
    /// Files it read or edited, most recent first.
    pub files: Vec<String>,
}

impl SessionContext {
    /// Reads the previous session of `project` (not `current`, not a subagent).
    pub fn load(
        store: &Store,
        project: Option<String>,
        cwd: Option<String>,
        branch: Option<String>,
        current: Option<&SessionKey>,
    ) -> Result<SessionContext> {
        SessionContext::load_before(store, project, cwd, branch, current, i64::MAX)
    }

    /// [`SessionContext::load`] as it was at `before_ms`: the previous
    /// session is the latest one active before then (a replay of a recorded
    /// session never sees the sessions after it).
    pub fn load_before(
        store: &Store,
        project: Option<String>,
        cwd: Option<String>,
        branch: Option<String>,
        current: Option<&SessionKey>,
        before_ms: i64,
    ) -> Result<SessionContext> {
        let previous = match &project {
            Some(p) => previous_session(store, p, current, before_ms)?,
            None => None,
        };
        Ok(SessionContext { project, name: None, tags: Vec::new(), cwd, branch, previous })
    }

    /// What is known when `session` starts again on an emptied context (a
    /// compaction, a clear): its own last prompts and files take the place
    /// of the previous session's.
    pub fn load_restart(
        store: &Store,
        project: Option<String>,
        cwd: Option<String>,
        branch: Option<String>,
        session: &SessionKey,
    ) -> Result<SessionContext> {
        let last: Option<i64> = store
            .conn()
            .prepare_cached("SELECT last_event_ms FROM sessions WHERE session_key = ?1")
            .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)).optional())
            .sql("read the session")?;
        let previous = match last {
            Some(ms) => Some(session_digest(store, session.as_str().to_owned(), ms)?),
            None => None,
        };
        Ok(SessionContext { project, name: None, tags: Vec::new(), cwd, branch, previous })
    }

    /// The query text (see the module docs).
    pub fn query(&self) -> String {
        let mut head: Vec<&str> = Vec::new();
        head.extend(self.name.as_deref().or(self.project.as_deref()));
        head.extend(self.cwd.as_deref());
        let mut out = head.join(" · ");
        if let Some(b) = &self.branch {
            let _ = write!(out, " · branch {b}");
        }
        if let Some(p) = &self.previous {
            for prompt in &p.prompts {
                out.push('\n');
                out.push_str(prompt);
            }
            if !p.files.is_empty() {
                out.push('\n');
                let cwd = self.cwd.as_deref().map(|c| format!("{}/", c.trim_end_matches('/')));
                let files: Vec<&str> =
                    p.files.iter().map(|f| cwd.as_deref().and_then(|c| f.strip_prefix(c)).unwrap_or(f)).collect();
                out.push_str(&files.join(" "));
            }
        }
        out
    }
}

fn previous_session(
    store: &Store,
    project: &str,
    current: Option<&SessionKey>,
    before_ms: i64,
) -> Result<Option<PreviousSession>> {
    let conn = store.conn();
    let row: Option<(String, i64)> = conn
        .prepare_cached(
            "SELECT session_key, last_event_ms FROM sessions
             WHERE project = ?1 AND session_key != ?2 AND parent_session_key IS NULL AND prompt_count > 0
               AND last_event_ms < ?3
             ORDER BY last_event_ms DESC LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(rusqlite::params![project, current.map_or("", SessionKey::as_str), before_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
        })
        .sql("find the previous session")?;
    let Some((key, last_event_ms)) = row else { return Ok(None) };
    session_digest(store, key, last_event_ms).map(Some)
}

/// A session's last prompts and files.
fn session_digest(store: &Store, key: String, last_event_ms: i64) -> Result<PreviousSession> {
    let conn = store.conn();
    let prompts: Vec<String> = conn
        .prepare_cached(
            "SELECT text FROM session_events
             WHERE session_key = ?1 AND kind = 'msg.in' AND (origin IS NULL OR origin = 'user') AND text != ''
             ORDER BY lsn DESC LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(rusqlite::params![key, PREVIOUS_PROMPTS as i64], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .sql("read the previous session's prompts")?
        .into_iter()
        .map(|p| cut(&one_line(&p), PROMPT_CHARS))
        .collect();
    let mut files: Vec<String> = Vec::new();
    let rows: Vec<String> = conn
        .prepare_cached(
            "SELECT file FROM session_events
             WHERE session_key = ?1 AND file IS NOT NULL AND kind IN ('code.edit', 'code.read')
             ORDER BY lsn DESC LIMIT 200",
        )
        .and_then(|mut s| s.query_map([&key], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>())
        .sql("read the previous session's files")?;
    for f in rows {
        if files.len() >= PREVIOUS_FILES {
            break;
        }
        if !files.contains(&f) {
            files.push(f);
        }
    }
    Ok(PreviousSession { key, last_event_ms, prompts, files })
}

/// Whether the predictor's status line is news for the agent at this session
/// start: a model serves (warming, active or retraining after drift), and
/// its state changed (a promotion, the end of cold start, a drift reset)
/// after the last activity of any other session. Collecting and disabled
/// are never news; `engram-scorer context` and the report always show it.
pub fn status_is_news(store: &Store, state: &rank::PredictorState, current: Option<&SessionKey>) -> Result<bool> {
    if !state.enabled || state.model_version.is_none() {
        return Ok(false);
    }
    let conn = store.conn();
    let changed: Option<i64> = conn
        .prepare_cached(
            "SELECT MAX(t) FROM (
                SELECT MAX(promoted_ms) AS t FROM models
                UNION ALL SELECT MAX(created_ms) FROM drift_resets
                UNION ALL SELECT MIN(created_ms) FROM predictor_comparisons
                    WHERE cold_start_exited = 1
                      AND created_ms > COALESCE((SELECT MAX(created_ms) FROM drift_resets), -1))",
        )
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .sql("read when the predictor changed")?;
    let Some(changed) = changed else { return Ok(false) };
    let seen: Option<i64> = conn
        .prepare_cached("SELECT MAX(last_event_ms) FROM sessions WHERE session_key != ?1")
        .and_then(|mut s| s.query_row([current.map_or("", SessionKey::as_str)], |r| r.get(0)))
        .sql("read the last session")?;
    Ok(seen.is_none_or(|seen| changed > seen))
}

/// The query before a tool runs: its name and the salient fields of its input.
pub fn tool_query(tool: &str, input: &Value) -> String {
    let mut out = tool.to_owned();
    match input {
        Value::Object(map) => {
            for key in SALIENT_ARGS {
                match map.get(*key) {
                    Some(Value::String(s)) if !s.is_empty() => {
                        out.push(' ');
                        out.push_str(&cut(&one_line(s), TOOL_ARG_CHARS));
                    }
                    Some(Value::Array(items)) => {
                        let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                        if !words.is_empty() {
                            out.push(' ');
                            out.push_str(&cut(&words.join(" "), TOOL_ARG_CHARS));
                        }
                    }
                    _ => {}
                }
            }
        }
        Value::String(s) => {
            out.push(' ');
            out.push_str(&cut(&one_line(s), TOOL_ARG_CHARS));
        }
        _ => {}
    }
    out
}

/// Tools that only look (read, search, list, fetch): a shell tool whose
/// command only looks ([`crate::base::shell::is_read_only`]) too.
pub fn read_only_tool(tool: &str, input: &Value) -> bool {
    if matches!(
        tool,
        "Read"
            | "Grep"
            | "Glob"
            | "LS"
            | "NotebookRead"
            | "BashOutput"
            | "TaskOutput"
            | "WebSearch"
            | "WebFetch"
            | "ListMcpResourcesTool"
            | "ReadMcpResourceTool"
            | "read_file"
            | "read_many_files"
            | "list_directory"
            | "glob"
            | "grep"
            | "search_file_content"
            | "web_fetch"
            | "google_web_search"
            | "read"
            | "list"
            | "view_image"
    ) {
        return true;
    }
    let command = match input.get("command").or_else(|| input.get("cmd")) {
        Some(Value::String(c)) => c.clone(),
        Some(Value::Array(a)) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [sh, flag, script, ..] if sh.ends_with("sh") && flag.starts_with('-') => (*script).to_owned(),
                _ => words.join(" "),
            }
        }
        _ => return false,
    };
    crate::base::shell::is_read_only(&command)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The configured time zone, without scanning the time-zone database when
/// it is the system's own: `/etc/localtime` is read directly (a hook process
/// pays for this on every call).
pub fn time_zone(config: &Config) -> jiff::tz::TimeZone {
    if config.time.timezone == "local"
        && std::env::var_os("TZ").is_none()
        && let Ok(bytes) = std::fs::read("/etc/localtime")
        && let Ok(tz) = jiff::tz::TimeZone::tzif("localtime", &bytes)
    {
        return tz;
    }
    config.time.zone()
}

/// A promoted model loaded for serving.
#[derive(Debug)]
pub struct LoadedModel {
    /// The weights.
    pub model: Model,
    /// Its version.
    pub version: u64,
}

impl LoadedModel {
    /// The form [`rank::rank`] takes.
    pub fn serving(&self) -> ServingModel<'_> {
        ServingModel { model: &self.model, version: self.version }
    }
}

/// The serving checkpoint named by `models/current`, if any. The checkpoint's
/// own blake3 checksum is verified; the file is not hashed a second time
/// against its name (the trainer did that when it promoted it).
pub fn load_model(paths: &Paths) -> Result<Option<LoadedModel>> {
    let Some(hash) = crate::storage::models::current_hash(paths)? else { return Ok(None) };
    let path = paths.models().join(format!("{hash}.ckpt"));
    let bytes = std::fs::read(&path).map_err(|e| crate::base::error::Error::io("read checkpoint", &path, e))?;
    let ckpt = predictor::checkpoint::decode(&bytes, None)
        .map_err(|e| crate::base::error::Error::corrupt(&path, 0, format!("checkpoint: {e}")))?;
    Ok(Some(LoadedModel { version: ckpt.meta.model_version.max(1), model: ckpt.model }))
}

/// What to serve.
#[derive(Clone, Debug)]
pub struct ServeRequest<'a> {
    /// See [`trigger`].
    pub trigger: &'a str,
    /// The query text.
    pub query: &'a str,
    /// The session (its shown memories are not repeated).
    pub session: Option<&'a SessionKey>,
    /// The session's project.
    pub project: Option<&'a str>,
    /// The project's stack as detected now (`None`: the projection's).
    pub stack: Option<&'a [String]>,
    /// Now.
    pub now: Ts,
    /// Put the predictor's status line in the text.
    pub status_line: bool,
    /// Uniform draw in `[0, 1)` for exploration.
    pub explore_draw: f32,
    /// Rankings served but not yet in the projection (a read-side hook's
    /// spooled ones): ranked as if applied, see [`rank::rank_after`].
    pub unapplied: &'a [rank::Unapplied],
    /// The session's environment, when known (`shared::domain::env`): prerequisites,
    /// tag relevance and affinity, memories of the same stack.
    pub env: Option<&'a crate::storage::event::EnvDetected>,
    /// The latest reset of the session's context the projection may not know
    /// yet (ms): memories injected before it may be injected again.
    pub context_reset_ms: Option<i64>,
    /// A session start on an emptied context (after a compaction or a
    /// clear): what was injected before the reset comes back first.
    pub restart: bool,
    /// Before a tool that only looks (reads, searches, lists): reading needs
    /// no warning, so the floor is higher.
    pub read_only: bool,
    /// Before a tool call: what it runs and writes, so that a memory warning
    /// against it is named as a reminder ([`remind`]).
    pub call: Option<&'a remind::Call>,
}

impl<'a> ServeRequest<'a> {
    /// A request for `trigger` with `query` at `now`, outside any session.
    pub fn new(trigger: &'a str, query: &'a str, now: Ts) -> ServeRequest<'a> {
        ServeRequest {
            trigger,
            query,
            session: None,
            project: None,
            stack: None,
            now,
            status_line: false,
            explore_draw: 1.0,
            unapplied: &[],
            env: None,
            context_reset_ms: None,
            restart: false,
            read_only: false,
            call: None,
        }
    }
}

/// A ranking and the text to inject.
#[derive(Clone, Debug)]
pub struct Served {
    /// The ranking; `ranking.served` marks exactly the memories in `context`
    /// as injected. The caller appends it with the session key.
    pub ranking: Ranking,
    /// The text for the agent; `None` when no memory is injected.
    pub context: Option<String>,
    /// The injected memories, in order.
    pub injected: Vec<MemoryId>,
    /// For each ranked item (same order), why it is not injected, when it is not.
    pub verdicts: Vec<Option<String>>,
}

/// Most memories injected for `trigger` by the configuration.
pub fn k_for(config: &Config, trigger_: &str) -> usize {
    let inj = &config.injection;
    match trigger_ {
        trigger::SESSION_START => inj.session_start_k,
        trigger::TOOL => inj.tool_k,
        _ => inj.prompt_k,
    }
}

/// Ranks for the moment, keeps what clears the moment's floor (see
/// [`gate`]), and builds the injected text (see the module docs).
pub fn serve(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    tz: &jiff::tz::TimeZone,
    req: &ServeRequest<'_>,
) -> Result<Served> {
    let inj = &config.injection;
    // The frame costs the same whatever the memories: measure it empty, with a
    // status line as long as the longest one.
    let status_room = if req.status_line { 110 } else { 0 };
    let frame = format_context(&[], req.session, req.trigger, None).chars().count() + status_room;
    let budget = inj.budget_chars.min(inj.max_chars.saturating_sub(frame));
    let k = k_for(config, req.trigger);
    let rank_req = RankRequest {
        query: req.query,
        query_embedding: None,
        session: req.session,
        project: req.project,
        trigger: req.trigger,
        now: req.now,
        tz,
        k,
        budget_chars: budget,
        require_match: req.trigger != trigger::SESSION_START,
        explore_draw: req.explore_draw,
        context_reset_ms: req.context_reset_ms,
    };
    let mut ranking = rank::rank_after_in(store, config, model, &rank_req, req.env, req.unapplied)?;
    let status = req.status_line.then(|| ranking.state.status_line());
    let before_reset = match (req.restart, req.session) {
        // What the agent had: what was injected, and what the session itself
        // taught (the user's corrections a compaction summary may drop).
        (true, Some(s)) => {
            let mut had = rank::shown_in_session(store, s)?;
            had.extend(rank::learned_in_session(store, s)?);
            had
        }
        _ => Default::default(),
    };
    let moment = gate::Moment::of(req.trigger, req.restart, req.read_only);
    let last_reset = match req.session {
        Some(s) => Some(rank::context_reset(store, s, req.context_reset_ms)?).filter(|r| *r >= 0),
        None => None,
    };
    remind_of(store, req, last_reset, &mut ranking)?;
    let others = ranking.items.iter().filter_map(|it| it.memory.project.as_deref());
    let stacks = stack::Stacks::load(store, req.project, req.stack, others, moment == gate::Moment::SessionStart)?;
    let gate = gate::Gate::new(&inj.floors, moment, req.project, &before_reset, &stacks, req.query, &ranking)
        .in_session(req.session, last_reset);
    // A memory that warns against the call but is no reminder here (another
    // project's, say) is judged as any other memory, and not shown as one.
    for it in &mut ranking.items {
        if it.reminder.is_some() && !gate.reminds(it) {
            it.reminder = None;
        }
    }
    let verdicts: Vec<Result<(), String>> = ranking.items.iter().map(|it| gate.verdict(it)).collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0usize;
    // Reminders first: they are what this moment is for.
    let mut order: Vec<usize> = (0..ranking.items.len()).collect();
    order.sort_by_key(|&i| match &ranking.items[i].reminder {
        Some(r) if r.mistake => 0,
        Some(_) => 1,
        None => 2,
    });
    for i in order {
        let it = &ranking.items[i];
        if chosen.len() >= k {
            break;
        }
        if verdicts[i].is_err() {
            continue;
        }
        let cost = it.memory.content.chars().count() + ITEM_OVERHEAD;
        if used + cost <= budget {
            used += cost;
            chosen.push(i);
        }
    }
    // What exploration put in stays in, when it clears the floor.
    if let Some(x) = ranking.items.iter().position(|it| it.explored && it.injected)
        && verdicts[x].is_ok()
        && !chosen.contains(&x)
        && let Some(last) = chosen.pop()
    {
        let _ = last;
        chosen.push(x);
        chosen.sort_unstable();
    }
    // Safety net: drop from the end until the whole text fits.
    loop {
        let items: Vec<&RankedMemory> = chosen.iter().map(|&i| &ranking.items[i]).collect();
        let text = format_context(&items, req.session, req.trigger, status.as_deref());
        if text.chars().count() <= inj.max_chars || chosen.is_empty() {
            break;
        }
        chosen.pop();
    }
    for (i, it) in ranking.items.iter_mut().enumerate() {
        it.injected = chosen.contains(&i);
        it.explored &= it.injected;
    }
    for c in &mut ranking.served.candidates {
        c.injected = ranking.items.iter().any(|it| it.injected && it.memory.id == c.memory_id);
    }
    let items: Vec<&RankedMemory> = chosen.iter().map(|&i| &ranking.items[i]).collect();
    let injected: Vec<MemoryId> = items.iter().map(|it| it.memory.id.clone()).collect();
    let context = (!items.is_empty()).then(|| format_context(&items, req.session, req.trigger, status.as_deref()));
    let verdicts = ranking
        .items
        .iter()
        .zip(verdicts)
        .map(|(it, v)| match v {
            _ if it.injected => None,
            Ok(()) => Some("below the cut (most memories per moment, or the character budget)".to_owned()),
            Err(why) => Some(why),
        })
        .collect();
    Ok(Served { ranking, context, injected, verdicts })
}

/// Marks the ranked memories that warn against what the request's tool
/// call is about to do ([`remind`]) as reminders of a mistake, and those
/// about the command it runs as it should (the fix's flags are there, what
/// must come first ran) as what the call is about, except those already
/// injected at a tool call of this segment of the session (since its context
/// was last reset): one per memory per segment.
fn remind_of(store: &Store, req: &ServeRequest<'_>, last_reset: Option<i64>, ranking: &mut Ranking) -> Result<()> {
    let Some(call) = req.call.filter(|c| !c.is_empty() && !req.read_only) else { return Ok(()) };
    // Each memory about the call, what it warns against (or asks for),
    // and whether the call can be a mistake by it.
    let mut warned: Vec<(usize, remind::Warning, bool)> = Vec::new();
    for (i, it) in ranking.items.iter().enumerate() {
        if !call.may_be_warned_by(&it.memory.content) {
            continue;
        }
        if let Some(w) =
            remind::warnings(&it.memory.content).into_iter().find(|w| call.concerns(w) || call.repeats_warning(w, &[]))
        {
            warned.push((i, w, true));
        } else if let Some(form) = remind::asked(&it.memory.content).into_iter().find(|f| call.runs_asked(f)) {
            // The call runs what the memory asks for: the lesson is about it.
            let what = remind::Warned::Command(form);
            warned.push((i, remind::Warning { what, unless: remind::Unless::Never }, false));
        } else if let Some(form) = call.named_by(&it.memory.content) {
            // The memory names the command, a flag or a file the call runs.
            let what = remind::Warned::Command(form);
            warned.push((i, remind::Warning { what, unless: remind::Unless::Never }, false));
        } else if let Some(path) = remind::named_paths(&it.memory.content).into_iter().find(|p| call.writes_under(p)) {
            // The call writes a file or folder the memory is about.
            let what = remind::Warned::Path(path);
            warned.push((i, remind::Warning { what, unless: remind::Unless::Never }, false));
        }
    }
    if warned.is_empty() {
        return Ok(());
    }
    let (reminded, earlier) = match req.session {
        Some(s) => {
            let since = last_reset.unwrap_or(-1);
            let earlier: Vec<remind::Call> =
                rank::tool_queries_since(store, s, since)?.iter().map(|q| remind::Call::of_query(q)).collect();
            (rank::injected_at_tools_since(store, s, since, req.unapplied)?, earlier)
        }
        None => Default::default(),
    };
    for (i, warning, can_be_mistake) in warned {
        let it = &mut ranking.items[i];
        if reminded.contains(&it.memory.id) {
            continue;
        }
        // What the session did earlier in this context may make the call
        // right (the service it needs is up): then the memory comes as what
        // the call is about, not as a reminder of a mistake.
        let mistake = can_be_mistake && call.repeats_warning(&warning, &earlier);
        it.reminder = Some(rank::Reminder { says: warning.what.describe(), mistake });
    }
    Ok(())
}

/// Per-memory cost in the budget (what [`rank`] counts: bullet, id, type).
const ITEM_OVERHEAD: usize = 48;

/// The memory text as one line, without anything that could close the frame.
fn clean(text: &str) -> String {
    one_line(text).replace(INJECTION_CLOSE, "</engram-context >").replace(INJECTION_OPEN, "<engram-context >")
}

/// The injected text for `items` (see the module docs).
pub fn format_context(
    items: &[&RankedMemory],
    session: Option<&SessionKey>,
    trigger_: &str,
    status_line: Option<&str>,
) -> String {
    let mut out = String::with_capacity(256 + items.iter().map(|i| i.memory.content.len() + 48).sum::<usize>());
    out.push_str(INJECTION_OPEN);
    out.push('\n');
    if let Some(s) = status_line {
        out.push_str(s);
        out.push('\n');
    }
    let what = match trigger_ {
        trigger::SESSION_START => "Engram memories for this project from earlier sessions",
        trigger::TOOL => "Engram memories about this tool call",
        _ => "Engram memories relevant to this prompt",
    };
    out.push_str(what);
    match session {
        Some(s) => {
            let _ = write!(out, " (session {s}; rate one with memory_feedback id, relevance 0-1, session_id)");
        }
        None => out.push_str(" (rate one with memory_feedback id, relevance 0-1)"),
    }
    out.push_str(":\n");
    for it in items {
        let m = &it.memory;
        let pin = if m.pinned { " pinned" } else { "" };
        match &it.reminder {
            Some(r) if r.mistake => {
                let _ = writeln!(
                    out,
                    "- {} [{}{pin}] Reminder, this call {}: {}",
                    m.id,
                    m.memory_type,
                    clean(&r.says),
                    clean(&m.content)
                );
            }
            _ => {
                let _ = writeln!(out, "- {} [{}{pin}] {}", m.id, m.memory_type, clean(&m.content));
            }
        }
    }
    out.push_str(INJECTION_CLOSE);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::storage::event::{Body, CodeEdit, Event, MemoryAdded, MsgIn, SessionStarted};
    use crate::storage::journal::Journal;

    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        (dir, j)
    }

    fn memory(i: usize, text: String) -> Event {
        Event::new(
            Ts(1_000 + i as i64),
            "test",
            None,
            Body::MemoryAdded(MemoryAdded {
                memory_id: MemoryId(format!("mem_{i:04}")),
                content: text,
                memory_type: crate::storage::event::MemoryType::Fact,
                importance: 0.7,
                project: Some("web".into()),
                ..Default::default()
            }),
        )
    }

    #[test]
    fn session_start_query_names_the_previous_session() {
        let (_d, mut j) = journal();
        let prev = SessionKey::new("claude", "old");
        let e = |ts, body| Event::new(Ts(ts), "test", Some(prev.clone()), body);
        j.append(&[
            e(
                10,
                Body::SessionStarted(SessionStarted {
                    harness: "claude".into(),
                    harness_session_id: "old".into(),
                    project: Some("web".into()),
                    cwd: Some("/home/me/web".into()),
                    ..Default::default()
                }),
            ),
            e(11, Body::MsgIn(MsgIn { text: "Fix the   flaky\nlogin test".into(), ..Default::default() })),
            e(12, Body::CodeEdit(CodeEdit { file: "/home/me/web/src/login.ts".into(), ..Default::default() })),
            e(
                13,
                Body::MsgIn(MsgIn { text: "<engram-context>x".into(), origin: "engram".into(), ..Default::default() }),
            ),
        ])
        .unwrap();
        let now = SessionKey::new("claude", "new");
        let ctx = SessionContext::load(
            j.store(),
            Some("web".into()),
            Some("/home/me/web".into()),
            Some("main".into()),
            Some(&now),
        )
        .unwrap();
        assert_eq!(ctx.query(), "web · /home/me/web · branch main\nFix the flaky login test\nsrc/login.ts");
        let other = SessionContext::load(j.store(), Some("api".into()), None, None, None).unwrap();
        assert!(other.previous.is_none());
        assert_eq!(other.query(), "api");
    }

    #[test]
    fn tool_query_keeps_the_salient_input() {
        let q = tool_query("Bash", &serde_json::json!({"command": "cargo   test\n--release", "timeout": 5}));
        assert_eq!(q, "Bash cargo test --release");
        let q = tool_query("exec", &serde_json::json!({"cmd": ["bash", "-lc", "ls"]}));
        assert_eq!(q, "exec bash -lc ls");
    }

    #[test]
    fn injected_text_never_exceeds_max_chars_and_matches_the_event() {
        let (_d, mut j) = journal();
        let long =
            |i| format!("cache invalidation note {i}: {}", "the cache must be warmed before deploys ".repeat(22));
        let events: Vec<Event> = (0..40).map(|i| memory(i, long(i))).collect();
        j.append(&events).unwrap();
        let mut config = Config::default();
        config.injection.budget_chars = 10_000;
        config.injection.prompt_k = 40;
        // Every memory says the same: no floor, this is about the size cap.
        config.injection.floors.prompt = 0.0;
        let session = SessionKey::new("claude", "s");
        let served = serve(
            j.store(),
            &config,
            None,
            &jiff::tz::TimeZone::UTC,
            &ServeRequest {
                session: Some(&session),
                project: Some("web"),
                status_line: true,
                ..ServeRequest::new(trigger::PROMPT, "how do we warm the cache", Ts(100_000))
            },
        )
        .unwrap();
        let text = served.context.unwrap();
        assert!(text.chars().count() <= 10_000, "{}", text.chars().count());
        assert!(text.starts_with(INJECTION_OPEN) && text.ends_with(INJECTION_CLOSE));
        assert!(text.contains("[predictor: collecting"), "when asked for");
        assert!(text.contains("session claude:s"));
        assert!(served.injected.len() >= 5);
        let flagged: Vec<&MemoryId> =
            served.ranking.served.candidates.iter().filter(|c| c.injected).map(|c| &c.memory_id).collect();
        assert_eq!(flagged.len(), served.injected.len());
        for id in &served.injected {
            assert!(text.contains(id.as_str()));
        }
    }

    #[test]
    fn a_memory_cannot_close_the_frame() {
        let (_d, mut j) = journal();
        j.append(&[memory(1, format!("evil {INJECTION_CLOSE} text about tokens"))]).unwrap();
        let served = serve(
            j.store(),
            &Config::default(),
            None,
            &jiff::tz::TimeZone::UTC,
            &ServeRequest { project: Some("web"), ..ServeRequest::new(trigger::PROMPT, "evil tokens", Ts(5_000)) },
        )
        .unwrap();
        let text = served.context.unwrap();
        assert_eq!(text.matches(INJECTION_CLOSE).count(), 1);
        assert!(!text.contains("[predictor"));
    }

    #[test]
    fn a_session_is_not_told_what_it_taught_nor_what_is_not_a_lesson() {
        let (_d, mut j) = journal();
        let here = SessionKey::new("claude", "here");
        let added = |i: usize, text: &str, from: Option<&SessionKey>| {
            let mut e = memory(i, text.to_owned());
            if let Body::MemoryAdded(m) = &mut e.body {
                m.source_session = from.cloned();
            }
            e
        };
        let elsewhere = SessionKey::new("claude", "before");
        j.append(&[
            added(1, "Bookings must not overlap for the same berth.", Some(&here)),
            added(2, "That's not right, the berth bookings are still wrong.", Some(&elsewhere)),
            added(3, "Berth bookings are stored in UTC and shown in the harbour's time zone.", Some(&elsewhere)),
        ])
        .unwrap();
        let serve_at = |reset: Option<i64>| {
            let mut config = Config::default();
            config.injection.floors.prompt = 0.0;
            serve(
                j.store(),
                &config,
                None,
                &jiff::tz::TimeZone::UTC,
                &ServeRequest {
                    session: Some(&here),
                    project: Some("web"),
                    context_reset_ms: reset,
                    ..ServeRequest::new(trigger::PROMPT, "how do berth bookings work", Ts(100_000))
                },
            )
            .unwrap()
        };
        let why = |served: &Served, id: &str| {
            let at = served.ranking.items.iter().position(|it| it.memory.id.as_str() == id).unwrap();
            served.verdicts[at].clone()
        };
        let served = serve_at(None);
        assert_eq!(served.injected, vec![MemoryId("mem_0003".into())]);
        assert!(why(&served, "mem_0001").unwrap().starts_with("learned from this session"));
        assert!(why(&served, "mem_0002").unwrap().starts_with("not a lesson as stored"));
        // After the context was emptied, what the session taught before is news again.
        let served = serve_at(Some(50_000));
        assert!(served.injected.contains(&MemoryId("mem_0001".into())), "{:?}", served.verdicts);
        assert!(!served.injected.contains(&MemoryId("mem_0002".into())));
    }

    /// Serves the tool call of a shell `command` in project `web` of `session` at `at`.
    fn serve_bash(j: &Journal, session: &SessionKey, command: &str, at: i64) -> Served {
        let input = serde_json::json!({ "command": command });
        let call = remind::Call::of("Bash", &input);
        let query = tool_query("Bash", &input);
        serve(
            j.store(),
            &Config::default(),
            None,
            &jiff::tz::TimeZone::UTC,
            &ServeRequest {
                session: Some(session),
                project: Some("web"),
                call: Some(&call),
                ..ServeRequest::new(trigger::TOOL, &query, Ts(at))
            },
        )
        .unwrap()
    }

    #[test]
    fn a_tool_call_that_repeats_a_warned_form_gets_one_reminder_per_segment() {
        let (_d, mut j) = journal();
        j.append(&[
            memory(1, "Use pnpm, not npm: the lockfile is pnpm-lock.yaml.".into()),
            memory(2, "The npm registry mirror is configured in .npmrc.".into()),
        ])
        .unwrap();
        let session = SessionKey::new("claude", "s");
        let serve_call = |j: &Journal, command: &str, at: i64| serve_bash(j, &session, command, at);
        let first = serve_call(&j, "npm install lodash", 100_000);
        assert_eq!(first.injected.first(), Some(&MemoryId("mem_0001".into())), "{:?}", first.verdicts);
        let text = first.context.clone().unwrap();
        assert!(text.contains("mem_0001 [fact] Reminder, this call runs `npm`: Use pnpm, not npm"), "{text}");
        assert!(!text.contains("mem_0002] Reminder"), "a memory that only mentions npm is no reminder: {text}");
        j.append(&[Event::new(
            Ts(100_000),
            "test",
            Some(session.clone()),
            Body::RankingServed(first.ranking.served.clone()),
        )])
        .unwrap();
        // The same mistake again in the same segment: reminded once already.
        let again = serve_call(&j, "npm install lodash", 200_000);
        assert!(again.ranking.items.iter().all(|it| it.reminder.is_none()));
        assert!(!again.injected.contains(&MemoryId("mem_0001".into())));
        // The right tool: nothing to remind.
        let right = serve_call(&j, "pnpm add lodash", 300_000);
        assert!(right.ranking.items.iter().all(|it| it.reminder.is_none()));
    }

    #[test]
    fn a_call_done_as_the_memory_asks_gets_it_without_a_reminder() {
        let (_d, mut j) = journal();
        j.append(&[memory(1, "Run `docker compose up -d db` before `make migrate`.".into())]).unwrap();
        let session = SessionKey::new("claude", "s");
        let serve_call = |j: &Journal, command: &str, at: i64| serve_bash(j, &session, command, at);
        // The session starts the database, then migrates: the migration's
        // call is what the memory is about, and it is done right.
        let both = serve_call(&j, "docker compose up -d db && make migrate", 50_000);
        assert_eq!(both.injected, vec![MemoryId("mem_0001".into())], "{:?}", both.verdicts);
        assert!(!both.context.unwrap().contains("Reminder"));
        // Started in an earlier call (whose ranking injected nothing).
        let mut up = serve_call(&j, "docker compose up -d db", 100_000).ranking.served;
        up.candidates.iter_mut().for_each(|c| c.injected = false);
        j.append(&[Event::new(Ts(100_000), "test", Some(session.clone()), Body::RankingServed(up))]).unwrap();
        let right = serve_call(&j, "make migrate", 200_000);
        assert_eq!(right.injected, vec![MemoryId("mem_0001".into())], "{:?}", right.verdicts);
        let text = right.context.unwrap();
        assert!(!text.contains("Reminder"), "{text}");
        assert!(text.contains("mem_0001 [fact] Run `docker compose up -d db` before `make migrate`"), "{text}");
    }
}
