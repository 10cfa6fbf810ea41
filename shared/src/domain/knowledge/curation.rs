//! Seed 004's curation agent: with a model (`[knowledge.curation]`, off by
//! default), what extraction learns during a session waits in the
//! observation buffer with status `pending` ([`stage_pending`]) and, once
//! the session has ended, the model curates the session's buffer
//! ([`curate_ended`]):
//!
//! ```text
//! ended session with pending entries
//!   ├─ curation off, or a bulk scan of history ──────────▶ flush (persist all)
//!   ├─ fewer than min_observations tool uses (5) ────────▶ flush
//!   └─ the model decides, per entry:
//!        keep ──▶ persisted       discard ──▶ discarded
//!        merge ─▶ into another entry it keeps, or into a stored memory
//!      and may extract knowledge (fact, decision, preference, pattern)
//!      from the session's observations ──▶ saved through conflict detection
//! ```
//!
//! The request is the session's observations (its extractive summary and
//! prompts, at most [`DIGEST_CHARS`] characters), its pending entries and
//! the stored memories most alike to them, redacted. The answer
//! `{"decisions":[{"id","action","into","reason"}],"knowledge":[{"text","type","importance","tags"}]}`
//! is validated strictly ([`validate`]): every entry decided once, known
//! ids only, a merge into an entry that is kept or into one of the memories
//! offered, at most [`MAX_KNOWLEDGE`] knowledge items of the four types, each
//! text at most 500 characters and without the injection marker. Another
//! model call running leaves the session for the next pass; a failure, an
//! answer refused or the daily budget spent flushes its buffer (seed:
//! "no model: flush all"). At most [`MODEL_PER_PASS`] sessions are curated
//! by the model per pass; the others wait.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::{EventId, SessionKey};
use crate::base::model::{ModelClient, NotNow};
use crate::base::time::Ts;
use crate::domain::knowledge::apply::{action, status};
use crate::domain::knowledge::buffer::{self, StagedFilter, StagedRecord};
use crate::domain::knowledge::ops;
use crate::domain::knowledge::similarity::similar_memories;
use crate::domain::memory::ops::{NewMemory, Origin};
use crate::storage::event::{Body, Event, INJECTION_OPEN, MemoryStaged, MemoryType};
use crate::storage::journal::Journal;
use crate::storage::store::Store;

/// The budget's name for curation.
pub const PURPOSE: &str = "knowledge.curation";
/// Sessions curated by the model per pass.
pub const MODEL_PER_PASS: usize = 3;
/// Characters of observations sent (seed: a digest of at most 4000).
pub const DIGEST_CHARS: usize = 4000;
/// Knowledge items one curation may extract.
pub const MAX_KNOWLEDGE: usize = 5;
/// Longest text of an extracted knowledge item.
pub const MAX_KNOWLEDGE_TEXT: usize = 500;
/// Types a curation may extract (seed 004 "Knowledge Extraction").
pub const KNOWLEDGE_TYPES: [&str; 4] = ["fact", "decision", "preference", "pattern"];
/// Ended sessions looked at per pass.
const PER_PASS: usize = 200;
/// Who resolves what curation decides.
const BY: &str = "curation";

/// The instructions of a curation request.
pub const INSTRUCTIONS: &str = "Curate what a coding agent's memory learned in one session before it is saved. \
For each entry of `entries` decide: keep (a durable lesson worth remembering), discard (trivial, wrong, \
redundant, a one-off), or merge (the same lesson as another entry you keep, or as one of `related`; give its \
id in `into`). You may also extract up to 5 items of durable knowledge from `observations` (types fact, \
decision, preference, pattern; one self-contained sentence each) that no entry holds. Reply with JSON \
{\"decisions\":[{\"id\":\"…\",\"action\":\"keep|discard|merge\",\"into\":\"…\",\"reason\":\"…\"}],\
\"knowledge\":[{\"text\":\"…\",\"type\":\"fact\",\"importance\":0.6,\"tags\":[]}]} and nothing else; every entry \
id appears in exactly one decision.";

/// Stages the memories `events` add as `pending` buffer entries (the
/// memories extraction learned while curation is on); other events pass
/// unchanged, and a memory already in the buffer is not staged again.
pub fn stage_pending(store: &Store, events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .filter_map(|mut e| {
            let Body::MemoryAdded(m) = &e.body else { return Some(e) };
            let stage_id = buffer::stage_id_for(&m.memory_id);
            if buffer::get(store, &stage_id).ok().flatten().is_some() {
                return None;
            }
            e.id = EventId::derived(&[m.memory_id.as_str(), "knowledge.staged", status::PENDING]);
            e.body = Body::MemoryStaged(MemoryStaged {
                stage_id,
                status: status::PENDING.to_owned(),
                memory: m.clone(),
                conflict_with: None,
                similarity: None,
                reason: "awaiting curation at the end of the session".to_owned(),
            });
            Some(e)
        })
        .collect()
}

/// One pending entry as the model sees it.
#[derive(Clone, Debug, Serialize)]
pub struct CurationEntry {
    /// The buffer entry (`obs_…`).
    pub id: String,
    /// Its text.
    pub text: String,
    /// Its type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// Its tags.
    pub tags: Vec<String>,
}

/// A stored memory an entry may be merged into.
#[derive(Clone, Debug, Serialize)]
pub struct RelatedMemory {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
}

/// What the session did, for knowledge extraction.
#[derive(Clone, Debug, Serialize)]
pub struct Observations {
    /// The extractive summary (first and last observation, files, tools).
    pub summary: String,
    /// The user's prompts, oldest first (cut).
    pub prompts: Vec<String>,
}

/// What the curator reads.
#[derive(Clone, Debug, Serialize)]
pub struct CurationRequest {
    /// 1.
    pub protocol: u32,
    /// Session key.
    pub session: String,
    /// What to do.
    pub instructions: &'static str,
    /// The session's observations.
    pub observations: Observations,
    /// Its pending entries.
    pub entries: Vec<CurationEntry>,
    /// Stored memories alike to them.
    pub related: Vec<RelatedMemory>,
}

/// One decision.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The entry.
    pub id: String,
    /// `keep`, `discard` or `merge`.
    pub action: String,
    /// What a `merge` goes into.
    #[serde(default)]
    pub into: Option<String>,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// One knowledge item extracted.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knowledge {
    /// One self-contained sentence.
    pub text: String,
    /// One of [`KNOWLEDGE_TYPES`].
    #[serde(rename = "type")]
    pub knowledge_type: String,
    /// 0..=1 (default 0.6).
    #[serde(default)]
    pub importance: Option<f32>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// What the curator answers.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurationResponse {
    /// A decision per entry.
    pub decisions: Vec<Decision>,
    /// Knowledge extracted.
    #[serde(default)]
    pub knowledge: Vec<Knowledge>,
}

/// Checks a curator's answer against its request (see the module docs).
pub fn validate(req: &CurationRequest, answer: &[u8]) -> std::result::Result<CurationResponse, String> {
    let resp: CurationResponse = serde_json::from_slice(answer).map_err(|e| format!("not the curation JSON: {e}"))?;
    let entries: BTreeSet<&str> = req.entries.iter().map(|e| e.id.as_str()).collect();
    let related: BTreeSet<&str> = req.related.iter().map(|m| m.id.as_str()).collect();
    let mut decided: BTreeMap<&str, &Decision> = BTreeMap::new();
    for d in &resp.decisions {
        if !entries.contains(d.id.as_str()) {
            return Err(format!("decision for unknown entry {}", d.id));
        }
        if decided.insert(d.id.as_str(), d).is_some() {
            return Err(format!("{} is decided twice", d.id));
        }
        if !["keep", "discard", "merge"].contains(&d.action.as_str()) {
            return Err(format!("{}: unknown action {:?} (keep, discard or merge)", d.id, d.action));
        }
        if d.action != "merge" && d.into.is_some() {
            return Err(format!("{}: only a merge goes into something", d.id));
        }
    }
    if let Some(missing) = entries.iter().find(|id| !decided.contains_key(*id)) {
        return Err(format!("entry {missing} is not decided"));
    }
    for d in resp.decisions.iter().filter(|d| d.action == "merge") {
        let Some(into) = d.into.as_deref() else { return Err(format!("{}: a merge needs `into`", d.id)) };
        if into == d.id {
            return Err(format!("{}: merged into itself", d.id));
        }
        let kept_entry = decided.get(into).is_some_and(|t| t.action == "keep");
        if !kept_entry && !related.contains(into) {
            return Err(format!("{}: merged into {into}, which is neither a kept entry nor a related memory", d.id));
        }
    }
    if resp.knowledge.len() > MAX_KNOWLEDGE {
        return Err(format!("{} knowledge items, at most {MAX_KNOWLEDGE}", resp.knowledge.len()));
    }
    for (i, k) in resp.knowledge.iter().enumerate() {
        let t = k.text.trim();
        if t.is_empty() || t.chars().count() > MAX_KNOWLEDGE_TEXT || t.contains(INJECTION_OPEN) {
            return Err(format!(
                "knowledge {i}: text empty, longer than {MAX_KNOWLEDGE_TEXT} or holding injected context"
            ));
        }
        if !KNOWLEDGE_TYPES.contains(&k.knowledge_type.as_str()) {
            return Err(format!(
                "knowledge {i}: type {:?} not one of {}",
                k.knowledge_type,
                KNOWLEDGE_TYPES.join(", ")
            ));
        }
        if k.importance.is_some_and(|x| !(0.0..=1.0).contains(&x)) {
            return Err(format!("knowledge {i}: importance outside 0..=1"));
        }
        if k.tags.len() > 8 || k.tags.iter().any(|t| t.trim().is_empty() || t.chars().count() > 64) {
            return Err(format!("knowledge {i}: too many or malformed tags"));
        }
    }
    Ok(resp)
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CurationReport {
    /// Sessions curated by the model.
    pub curated: usize,
    /// Sessions whose buffer was saved as it was (no model, too few
    /// observations, a failure).
    pub flushed: usize,
    /// Sessions left for the next pass (another model call running, past
    /// this pass's share).
    pub waiting: usize,
    /// Entries kept.
    pub kept: usize,
    /// Entries discarded.
    pub discarded: usize,
    /// Entries merged.
    pub merged: usize,
    /// Knowledge items extracted and saved.
    pub knowledge_extracted: usize,
}

/// Ended sessions with pending entries, oldest end first: (key, tool uses, project).
fn due(store: &Store, limit: usize) -> Result<Vec<(SessionKey, i64, Option<String>)>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT s.session_key, s.tool_call_count, s.project FROM sessions s
             WHERE s.ended_ms IS NOT NULL AND EXISTS (
                SELECT 1 FROM staged_memories m WHERE m.session_key = s.session_key AND m.status = 'pending')
             ORDER BY s.ended_ms, s.session_key LIMIT ?1",
        )
        .sql("list sessions to curate")?;
    let rows = stmt
        .query_map([limit as i64], |r| Ok((SessionKey(r.get(0)?), r.get(1)?, r.get(2)?)))
        .sql("list sessions to curate")?;
    rows.collect::<rusqlite::Result<_>>().sql("list sessions to curate")
}

fn pending_of(store: &Store, session: &SessionKey) -> Result<Vec<StagedRecord>> {
    let all =
        buffer::list(store, &StagedFilter { status: Some(status::PENDING.into()), project: None, limit: 10_000 })?;
    Ok(all.into_iter().filter(|r| r.session.as_deref() == Some(session.as_str())).collect())
}

/// The request for one session's buffer (redacted by the caller).
pub fn request(store: &Store, session: &SessionKey, entries: &[StagedRecord]) -> Result<CurationRequest> {
    let summary = super::summary::extractive(store, session)?.map(|f| f.summary).unwrap_or_default();
    let prompts: Vec<String> = store
        .conn()
        .prepare_cached(
            "SELECT text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
             AND (origin IS NULL OR origin = ?2) AND text != '' ORDER BY lsn LIMIT 40",
        )
        .and_then(|mut s| {
            s.query_map(params![session.as_str(), crate::storage::event::origin::USER], |r| r.get::<_, String>(0))?
                .collect()
        })
        .sql("read the session's prompts")?;
    let mut budget = DIGEST_CHARS.saturating_sub(summary.chars().count());
    let mut cut: Vec<String> = Vec::new();
    for p in &prompts {
        let p = super::preview(p, 300);
        let n = p.chars().count();
        if n > budget {
            break;
        }
        budget -= n;
        cut.push(p);
    }
    let mut related: Vec<RelatedMemory> = Vec::new();
    for e in entries {
        let alike = similar_memories(store, &e.content, None, e.project.as_deref(), &[], 0.5, 3)?;
        for m in alike {
            if !related.iter().any(|r| r.id == m.id.as_str()) {
                related.push(RelatedMemory { id: m.id.as_str().to_owned(), text: m.content });
            }
        }
    }
    Ok(CurationRequest {
        protocol: 1,
        session: session.as_str().to_owned(),
        instructions: INSTRUCTIONS,
        observations: Observations { summary: super::preview(&summary, DIGEST_CHARS), prompts: cut },
        entries: entries
            .iter()
            .map(|e| CurationEntry {
                id: e.id.clone(),
                text: e.content.clone(),
                memory_type: e.memory_type,
                tags: e.tags.clone(),
            })
            .collect(),
        related,
    })
}

fn resolve(journal: &mut Journal, config: &Config, stage: &str, choice: &str, into: Option<&str>, now: Ts) -> bool {
    match ops::resolve(journal, config, stage, choice, into, BY, now) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(stage, choice, error = %e, "cannot apply a curation decision");
            false
        }
    }
}

/// Saves every entry of a session's buffer as it is.
fn flush(journal: &mut Journal, config: &Config, entries: &[StagedRecord], now: Ts) -> usize {
    entries.iter().filter(|e| resolve(journal, config, &e.id, action::PERSIST, None, now)).count()
}

/// Applies a validated answer; returns (kept, discarded, merged, knowledge).
fn apply(
    journal: &mut Journal,
    config: &Config,
    session: &SessionKey,
    project: Option<&str>,
    entries: &[StagedRecord],
    resp: &CurationResponse,
    now: Ts,
) -> (usize, usize, usize, usize) {
    let (mut kept, mut discarded, mut merged, mut extracted) = (0, 0, 0, 0);
    let by_id: BTreeMap<&str, &StagedRecord> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    // Kept first, so that merges into them find them saved.
    for d in resp.decisions.iter().filter(|d| d.action == "keep") {
        kept += usize::from(resolve(journal, config, &d.id, action::PERSIST, None, now));
    }
    for d in &resp.decisions {
        match d.action.as_str() {
            "discard" => discarded += usize::from(resolve(journal, config, &d.id, action::DISCARD, None, now)),
            "merge" => {
                let Some(into) = d.into.as_deref() else { continue };
                let target = by_id.get(into).map_or(into.to_owned(), |e| e.memory_id.clone());
                merged += usize::from(resolve(journal, config, &d.id, action::MERGE, Some(&target), now));
            }
            _ => {}
        }
    }
    let origin = Origin { source: "curation".into(), by: BY.into(), session: Some(session.clone()) };
    for k in &resp.knowledge {
        let m = NewMemory {
            text: crate::storage::redact::redact_text(k.text.trim()).into_owned(),
            memory_type: MemoryType::from_stored(&k.knowledge_type),
            importance: k.importance.unwrap_or(0.6),
            project: project.map(str::to_owned),
            tags: k.tags.iter().map(|t| t.trim().to_lowercase()).collect(),
            pinned: false,
        };
        match ops::save(journal, config, m, &origin, &[], now) {
            Ok(_) => extracted += 1,
            Err(e) => tracing::warn!(session = %session, error = %e, "cannot save knowledge a curation extracted"),
        }
    }
    (kept, discarded, merged, extracted)
}

/// Curates the buffer of every ended session with pending entries (see the
/// module docs); the model is asked only when `allow_model` (the hooks'
/// worker; a bulk scan of history flushes).
pub fn curate_ended(journal: &mut Journal, config: &Config, allow_model: bool, now: Ts) -> Result<CurationReport> {
    let mut report = CurationReport::default();
    let cfg = &config.knowledge.curation;
    let curator = cfg.curator();
    let with_model = allow_model && curator.enabled();
    let paths = journal.paths().clone();
    let mut asked = 0usize;
    for (session, observations, project) in due(journal.store(), PER_PASS)? {
        let entries = pending_of(journal.store(), &session)?;
        if entries.is_empty() {
            continue;
        }
        let few = observations < i64::from(cfg.min_observations);
        if !with_model || few {
            flush(journal, config, &entries, now);
            report.flushed += 1;
            continue;
        }
        if asked >= MODEL_PER_PASS {
            report.waiting += 1;
            continue;
        }
        asked += 1;
        let req = request(journal.store(), &session, &entries)?;
        let mut value = serde_json::to_value(&req).unwrap_or_default();
        crate::storage::redact::redact_value(&mut value);
        let client = ModelClient::new(&curator, &paths);
        let answer = match client.ask_metered(&paths, PURPOSE, curator.timeout(), now, INSTRUCTIONS, &value) {
            Err(NotNow::Busy) => {
                tracing::info!(session = %session, "another model call is running; curation waits for the next pass");
                report.waiting += 1;
                continue;
            }
            Err(e) => Err(e.to_string()),
            Ok(x) => x.answer.map_err(|e| e.to_string()).and_then(|a| validate(&req, &a)),
        };
        match answer {
            Ok(resp) => {
                let (k, d, m, x) = apply(journal, config, &session, project.as_deref(), &entries, &resp, now);
                report.curated += 1;
                report.kept += k;
                report.discarded += d;
                report.merged += m;
                report.knowledge_extracted += x;
            }
            Err(e) => {
                tracing::warn!(session = %session, error = %e, "curation failed; the session's buffer is saved as it is");
                flush(journal, config, &entries, now);
                report.flushed += 1;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> CurationRequest {
        let entry =
            |id: &str| CurationEntry { id: id.into(), text: "x".into(), memory_type: MemoryType::Fact, tags: vec![] };
        CurationRequest {
            protocol: 1,
            session: "claude:s".into(),
            instructions: INSTRUCTIONS,
            observations: Observations { summary: String::new(), prompts: vec![] },
            entries: vec![entry("obs_a"), entry("obs_b"), entry("obs_c")],
            related: vec![RelatedMemory { id: "mem_1".into(), text: "y".into() }],
        }
    }

    #[test]
    fn a_curation_answer_is_validated_strictly() {
        let ok = br#"{"decisions":[{"id":"obs_a","action":"keep"},{"id":"obs_b","action":"merge","into":"obs_a"},
            {"id":"obs_c","action":"merge","into":"mem_1","reason":"same"}],
            "knowledge":[{"text":"The project bundles with Vite.","type":"fact"}]}"#;
        let r = validate(&req(), ok).unwrap();
        assert_eq!((r.decisions.len(), r.knowledge.len()), (3, 1));
        for (bad, why) in [
            (r#"{"decisions":[{"id":"obs_a","action":"keep"},{"id":"obs_b","action":"keep"}]}"#, "not decided"),
            (
                r#"{"decisions":[{"id":"obs_a","action":"keep"},{"id":"obs_a","action":"keep"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}]}"#,
                "twice",
            ),
            (r#"{"decisions":[{"id":"obs_x","action":"keep"}]}"#, "unknown entry"),
            (
                r#"{"decisions":[{"id":"obs_a","action":"persist"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}]}"#,
                "unknown action",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"discard"},{"id":"obs_b","action":"merge","into":"obs_a"},{"id":"obs_c","action":"keep"}]}"#,
                "neither a kept entry",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"merge"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}]}"#,
                "needs `into`",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"merge","into":"obs_a"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}]}"#,
                "itself",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"keep","into":"mem_1"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}]}"#,
                "only a merge",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"keep"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}],"knowledge":[{"text":"x","type":"gotcha"}]}"#,
                "type",
            ),
            (
                r#"{"decisions":[{"id":"obs_a","action":"keep"},{"id":"obs_b","action":"keep"},{"id":"obs_c","action":"keep"}],"knowledge":[{"text":"<engram-context> x","type":"fact"}]}"#,
                "injected",
            ),
            (r#"{"decisions":[],"extra":1}"#, "not the curation JSON"),
        ] {
            let err = validate(&req(), bad.as_bytes()).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
        let many: Vec<String> = (0..6).map(|i| format!(r#"{{"text":"fact {i}","type":"fact"}}"#)).collect();
        let too_many = format!(
            r#"{{"decisions":[{{"id":"obs_a","action":"keep"}},{{"id":"obs_b","action":"keep"}},{{"id":"obs_c","action":"keep"}}],"knowledge":[{}]}}"#,
            many.join(",")
        );
        assert!(validate(&req(), too_many.as_bytes()).unwrap_err().contains("at most 5"));
    }
}
