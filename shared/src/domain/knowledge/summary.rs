//! Session summaries (seed 004 "Summarization"): when a session has ended
//! (its `session.ended`, from the SessionEnd hook or an idle end), the
//! writer that ingests it records `session.summarized`.
//!
//! The summary is extractive ([`extractive`]): the first and the last
//! observation (user prompt or tool use), the files it edited and read, the
//! tools it used with their counts, the tags of what it learned. With a
//! model (`knowledge.summary`, a preset or a command, off by default;
//! [`external`]) the summary is LLM-first: the model gets the same facts
//! plus the session's prompts as JSON (redacted) and must answer
//! `{"summary": "…"}` (non-empty, at most 1200 characters, without the
//! injection marker). Anything else (a failure, a timeout, an answer that
//! is not that JSON, the daily budget spent) falls back to the extractive
//! summary. Model calls are made by the hooks' worker only, at most
//! [`MODEL_PER_PASS`] per pass (the other ended sessions wait for the next
//! pass), one at a time per data home.

use std::collections::BTreeMap;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::model::{ModelClient, ModelConfig};
use crate::base::time::Ts;
use crate::storage::event::{Body, INJECTION_OPEN, SessionSummarized, origin};
use crate::storage::journal::Journal;
use crate::storage::store::Store;

/// Files named in a summary.
const FILES: usize = 15;
/// Tags named in a summary.
const TAGS: usize = 10;
/// Longest external summary accepted.
pub const MAX_EXTERNAL: usize = 1200;
/// Sessions summarised per pass.
const PER_PASS: usize = 200;
/// Sessions summarised by the model per pass.
pub const MODEL_PER_PASS: usize = 3;
/// The budget's name for summaries.
pub const PURPOSE: &str = "knowledge.summary";

fn observations(store: &Store, session: &str, newest: bool) -> Result<Option<String>> {
    let order = if newest { "DESC" } else { "ASC" };
    let row: Option<(String, Option<String>, String)> = store
        .conn()
        .prepare_cached(&format!(
            "SELECT kind, tool, text FROM session_events
             WHERE session_key = ?1 AND text != '' AND (
                (kind = 'msg.in' AND (origin IS NULL OR origin = ?2)) OR kind = 'tool.call')
             ORDER BY lsn {order} LIMIT 1"
        ))
        .and_then(|mut s| {
            s.query_row(params![session, origin::USER], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map(Some).or_else(
                |e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                },
            )
        })
        .sql("read the session's observations")?;
    Ok(row.map(|(kind, tool, text)| {
        let text = super::preview(&crate::storage::redact::redact_text(&text), 200);
        match (kind.as_str(), tool) {
            ("tool.call", Some(t)) if !text.starts_with(&t) => format!("{t}: {text}"),
            _ => text,
        }
    }))
}

/// The extractive summary of a session; `None` when nothing happened in it.
pub fn extractive(store: &Store, session: &SessionKey) -> Result<Option<SessionSummarized>> {
    let key = session.as_str();
    let (Some(first), Some(last)) = (observations(store, key, false)?, observations(store, key, true)?) else {
        return Ok(None);
    };
    let conn = store.conn();
    let files: Vec<String> = conn
        .prepare_cached(
            "SELECT file FROM session_events WHERE session_key = ?1 AND file IS NOT NULL
             GROUP BY file ORDER BY MAX(kind = 'code.edit') DESC, MAX(lsn) DESC LIMIT ?2",
        )
        .and_then(|mut s| s.query_map(params![key, FILES as i64], |r| r.get(0))?.collect())
        .sql("read the session's files")?;
    let tools: BTreeMap<String, u32> = conn
        .prepare_cached(
            "SELECT tool, COUNT(*) FROM session_events WHERE session_key = ?1 AND kind = 'tool.call' AND tool IS NOT NULL
             GROUP BY tool",
        )
        .and_then(|mut s| s.query_map([key], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .sql("read the session's tools")?;
    let tags: Vec<String> = conn
        .prepare_cached(
            "SELECT j.value, COUNT(*) AS n FROM memories m, json_each(m.tags) j
             WHERE m.is_deleted = 0 AND m.id IN (SELECT memory_id FROM memory_sessions WHERE session_key = ?1)
             GROUP BY j.value ORDER BY n DESC, j.value LIMIT ?2",
        )
        .and_then(|mut s| s.query_map(params![key, TAGS as i64], |r| r.get(0))?.collect())
        .sql("read the session's tags")?;
    let mut text =
        if first == last { format!("\"{first}\".") } else { format!("Began with \"{first}\"; ended with \"{last}\".") };
    if !files.is_empty() {
        let names: Vec<&str> = files.iter().take(6).map(|f| f.rsplit('/').next().unwrap_or(f)).collect();
        let more = if files.len() > 6 { format!(" and {} more", files.len() - 6) } else { String::new() };
        text.push_str(&format!(" Files: {}{more}.", names.join(", ")));
    }
    if !tools.is_empty() {
        let mut by_use: Vec<(&String, &u32)> = tools.iter().collect();
        by_use.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let list: Vec<String> = by_use.iter().take(6).map(|(t, n)| format!("{t}×{n}")).collect();
        text.push_str(&format!(" Tools: {}.", list.join(", ")));
    }
    if !tags.is_empty() {
        text.push_str(&format!(" Tags: {}.", tags.join(", ")));
    }
    Ok(Some(SessionSummarized {
        summary: text,
        method: "extractive".into(),
        first: Some(first),
        last: Some(last),
        files,
        tools,
        tags,
    }))
}

/// What the external summariser reads.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRequest<'a> {
    /// 1.
    pub protocol: u32,
    /// Session key.
    pub session: &'a str,
    /// What to do.
    pub instructions: &'static str,
    /// The session's user prompts, oldest first (redacted, cut).
    pub prompts: Vec<String>,
    /// The extractive summary's facts.
    pub facts: &'a SessionSummarized,
}

/// What it must answer.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryResponse {
    /// 2-4 sentences.
    pub summary: String,
}

/// Checks an external summariser's answer.
pub fn validate(stdout: &[u8]) -> std::result::Result<String, String> {
    let r: SummaryResponse = serde_json::from_slice(stdout).map_err(|e| format!("not the summary JSON: {e}"))?;
    let s = r.summary.trim();
    if s.is_empty() || s.chars().count() > MAX_EXTERNAL {
        return Err(format!("the summary is empty or longer than {MAX_EXTERNAL} characters"));
    }
    if s.contains(INJECTION_OPEN) {
        return Err("the summary holds injected context".into());
    }
    Ok(crate::storage::redact::redact_text(s).into_owned())
}

/// The instructions of a summary request.
pub const INSTRUCTIONS: &str = "Summarize this coding-agent session in 2-4 sentences from its prompts and facts. \
Focus on what was done, files touched, outcome. Reply with JSON {\"summary\": \"…\"} and nothing else.";

/// The LLM summary through the configured model, or why there is none.
pub fn external(
    store: &Store,
    paths: &crate::base::paths::Paths,
    model: &ModelConfig,
    session: &SessionKey,
    facts: &SessionSummarized,
    now: Ts,
) -> std::result::Result<String, String> {
    let prompts: Vec<String> = store
        .conn()
        .prepare_cached(
            "SELECT text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
             AND (origin IS NULL OR origin = ?2) AND text != '' ORDER BY lsn LIMIT 40",
        )
        .and_then(|mut s| s.query_map(params![session.as_str(), origin::USER], |r| r.get::<_, String>(0))?.collect())
        .map_err(|e| e.to_string())?;
    let prompts = prompts.iter().map(|p| super::preview(&crate::storage::redact::redact_text(p), 500)).collect();
    let req = SummaryRequest { protocol: 1, session: session.as_str(), instructions: INSTRUCTIONS, prompts, facts };
    let mut value = serde_json::to_value(&req).map_err(|e| e.to_string())?;
    crate::storage::redact::redact_value(&mut value);
    let client = ModelClient::new(model, paths);
    let exchange =
        client.ask_metered(paths, PURPOSE, model.timeout(), now, INSTRUCTIONS, &value).map_err(|e| e.to_string())?;
    let out = exchange.answer.map_err(|e| e.to_string())?;
    validate(&out)
}

/// Ended sessions with content and no summary newer than their last event.
pub fn due(store: &Store, limit: usize) -> Result<Vec<SessionKey>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT s.session_key FROM sessions s LEFT JOIN session_summaries m ON m.session_key = s.session_key
             WHERE s.ended_ms IS NOT NULL AND (s.prompt_count > 0 OR s.tool_call_count > 0)
               AND (m.session_key IS NULL OR m.created_ms < s.last_event_ms)
             ORDER BY s.ended_ms LIMIT ?1",
        )
        .sql("list sessions to summarise")?;
    let rows = stmt.query_map([limit as i64], |r| Ok(SessionKey(r.get(0)?))).sql("list sessions to summarise")?;
    rows.collect::<rusqlite::Result<_>>().sql("list sessions to summarise")
}

/// Summarises every ended session that needs it (see the module docs), with
/// the external command only when `allow_external` (the hooks' worker; a
/// bulk scan of old history stays extractive). Returns how many.
///
/// Extractive summaries are all written in this pass, [`PER_PASS`] sessions
/// to an append, so that the scan that ingested a history leaves nothing to
/// the next one (a rescan with nothing new appends nothing). With the model,
/// at most [`MODEL_PER_PASS`] sessions are summarised; the others wait.
pub fn summarize_ended(journal: &mut Journal, config: &Config, allow_external: bool) -> Result<usize> {
    let with_model = allow_external && config.knowledge.summary.enabled();
    let per_pass = if with_model { MODEL_PER_PASS } else { PER_PASS };
    let paths = journal.paths().clone();
    let mut total = 0;
    // Due sessions with nothing to summarise stay due: listed past, not again.
    let mut empty: std::collections::HashSet<SessionKey> = std::collections::HashSet::new();
    let mut summarized: std::collections::HashSet<SessionKey> = std::collections::HashSet::new();
    loop {
        let listed = due(journal.store(), per_pass + empty.len())?;
        let exhausted = listed.len() < per_pass + empty.len();
        if listed.iter().any(|k| summarized.contains(k)) {
            // Still due after its summary was applied: never loop on it.
            tracing::warn!("a summarised session is still listed as due; the rest wait for the next pass");
            return Ok(total);
        }
        let sessions: Vec<SessionKey> = listed.into_iter().filter(|k| !empty.contains(k)).collect();
        let mut events = Vec::new();
        for key in sessions {
            let Some(mut facts) = extractive(journal.store(), &key)? else {
                empty.insert(key);
                continue;
            };
            if with_model {
                match external(journal.store(), &paths, &config.knowledge.summary, &key, &facts, Ts::now()) {
                    Ok(text) => {
                        facts.summary = text;
                        facts.method = "external".into();
                    }
                    Err(e) => {
                        tracing::warn!(session = %key, error = %e, "external summary failed; keeping the extractive one")
                    }
                }
            }
            let last: i64 = journal
                .store()
                .conn()
                .query_row("SELECT last_event_ms FROM sessions WHERE session_key = ?1", [key.as_str()], |r| r.get(0))
                .sql("read the session")?;
            summarized.insert(key.clone());
            let e = journal.event(Ts(last), Some(key), Body::SessionSummarized(facts));
            events.push(e);
        }
        let n = events.len();
        if n > 0 {
            journal.append(&events)?;
        }
        total += n;
        if with_model || exhausted {
            return Ok(total);
        }
    }
}

/// A session's summary, if it has one.
pub fn get(store: &Store, session: &str) -> Result<Option<(String, String)>> {
    use rusqlite::OptionalExtension;
    store
        .conn()
        .prepare_cached("SELECT summary, method FROM session_summaries WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .sql("read a summary")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::base::paths::Paths;
    use crate::storage::event::{MsgIn, SessionEnded};

    /// More ended sessions than one append holds are all summarised by the
    /// first pass; the next pass, with nothing new, appends nothing.
    #[test]
    fn one_pass_summarises_every_ended_session_and_the_next_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "t").unwrap();
        let n = PER_PASS * 2 + 7;
        let mut events = Vec::new();
        for i in 0..n {
            let key = Some(SessionKey::new("claude", &format!("s{i}")));
            let ts = 1_000 + i as i64 * 10;
            // Every fifth session said nothing with text: nothing to summarise.
            let text = if i % 5 == 0 { String::new() } else { format!("fix the flaky test number {i}") };
            let msg = MsgIn { text, origin: origin::USER.into(), ..MsgIn::default() };
            events.push(j.event(Ts(ts), key.clone(), Body::MsgIn(msg)));
            events.push(j.event(Ts(ts + 1), key, Body::SessionEnded(SessionEnded { reason: "other".into() })));
        }
        j.append(&events).unwrap();
        let config = Config::default();
        let first = summarize_ended(&mut j, &config, false).unwrap();
        let summaries: i64 =
            j.store().conn().query_row("SELECT COUNT(*) FROM session_summaries", [], |r| r.get(0)).unwrap();
        assert_eq!(first as i64, summaries);
        // All but the silent fifth, more than one append holds.
        assert_eq!(first, n - n.div_ceil(5), "summarised in one pass");
        assert!(first > PER_PASS);
        let lsn = j.tape().lock().unwrap().last_lsn();
        assert_eq!(summarize_ended(&mut j, &config, false).unwrap(), 0);
        assert_eq!(j.tape().lock().unwrap().last_lsn(), lsn, "a pass with nothing new appends nothing");
    }

    #[test]
    fn external_answers_are_checked() {
        assert_eq!(validate(br#"{"summary":"Fixed the login test."}"#).unwrap_or_default(), "Fixed the login test.");
        assert!(validate(br#"{"summary":""}"#).is_err());
        assert!(validate(br#"{"summary":"x","extra":1}"#).is_err());
        assert!(validate(b"not json").is_err());
        assert!(validate(br#"{"summary":"<engram-context> hi"}"#).is_err());
        let long = format!(r#"{{"summary":"{}"}}"#, "a".repeat(MAX_EXTERNAL + 1));
        assert!(validate(long.as_bytes()).is_err());
    }
}
