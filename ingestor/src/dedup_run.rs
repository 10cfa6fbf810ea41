//! `engram-ingestor dedup`: seed 000's dedup pipeline, which catches the
//! conceptual duplicates the write-time check ([`crate::dedup`]) lets
//! through.
//!
//! 1. **Mode.** Fewer than `knowledge.dedup.bootstrap_below` (3) verified
//!    memories: *bootstrap*, every current memory against every other.
//!    Otherwise *incremental*: each unverified memory only against verified
//!    ones, so two verified memories are never merged through a third
//!    (no bridge destruction).
//! 2. **Candidates.** For each unverified memory, the `top_k` (5) most alike
//!    candidates at least `min_similarity` (0.5) alike (the measure of
//!    [`shared::domain::knowledge::similarity`], candidates from the full-text
//!    index; same project or none).
//! 3. **Judgement.** Without a judge (the default) pairs at or above
//!    `merge_similarity` (0.95) are duplicates, grouped by union in bootstrap
//!    mode and each unverified memory with its best verified match in
//!    incremental mode. With the optional model (`knowledge.dedup.preset`
//!    or `knowledge.dedup.command`, off by default; see
//!    [`shared::base::model`]) the pairs go out in batches of at most
//!    `batch_chars` characters of text (redacted), one model call at a time
//!    per data home and at most `knowledge.dedup.daily_calls` a day; the answer
//!    `{"groups":[{"ids":[…],"canonical_text":"…","confidence":0.9,"reason":"…"}],"no_match_ids":[…]}`
//!    is validated strictly ([`validate`]): known ids only, no id twice,
//!    groups of two or more, confidence in 0..=1, every unverified id
//!    accounted for, in incremental mode at most one verified memory per
//!    group. A batch whose answer fails counts an attempt on its unverified
//!    memories (with the error) and is retried in a later run, up to
//!    `max_attempts`; a batch not sent (the daily budget spent, another
//!    model call running too long) counts nothing and waits for a later run.
//! 4. **Merge.** Each group is one `memory.merged` event (the merge log;
//!    its apply is seed 000's merge semantics, one transaction): the
//!    survivor is the verified member, else the one seen most often, else
//!    the lowest id; it takes the judge's canonical text, if any.
//! 5. **Queue.** Unmatched memories are verified (`dedup.checked`);
//!    absorbed ones are verified for good; a survivor goes back to the
//!    queue, and the next pass (up to `max_passes`) compares it again,
//!    until a pass merges nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use shared::base::config::Config;
use shared::base::ids::MemoryId;
use shared::base::model::ModelClient;
use shared::base::time::Ts;
use shared::domain::knowledge::similarity::similar_memories;
use shared::domain::memory::ops::MAX_TEXT;
use shared::storage::event::{Body, DedupChecked, INJECTION_OPEN, MemoriesMerged};
use shared::storage::journal::Journal;

use crate::error::{EngramContext, Error};

/// What to do.
#[derive(Clone, Debug, Default)]
pub struct DedupOptions {
    /// Judge and report the first pass; write nothing.
    pub dry_run: bool,
    /// Override `knowledge.dedup.max_passes`.
    pub max_passes: Option<u32>,
}

/// A memory and its dedup candidates with their similarity.
type Candidates<'a> = (&'a Entry, Vec<(&'a Entry, f32)>);

/// One memory as the pipeline sees it.
#[derive(Clone, Debug)]
struct Entry {
    id: String,
    content: String,
    project: Option<String>,
    occurrences: i64,
    verified: bool,
}

/// One merge made (or, in a dry run, proposed).
#[derive(Clone, Debug, Serialize)]
pub struct MergeRecord {
    /// The memory that stays.
    pub survivor: String,
    /// The memories merged into it.
    pub absorbed: Vec<String>,
    /// The survivor's new text, when the judge gave one.
    pub content: Option<String>,
    /// The judge's confidence (the similarity without a judge).
    pub confidence: f32,
    /// Why.
    pub reason: String,
}

/// One pass.
#[derive(Clone, Debug, Serialize)]
pub struct PassReport {
    /// 1-based.
    pub pass: u32,
    /// `bootstrap` or `incremental`.
    pub mode: &'static str,
    /// Memories waiting for verification.
    pub unverified: usize,
    /// Memories already verified.
    pub verified: usize,
    /// Candidate pairs above `min_similarity`.
    pub pairs: usize,
    /// Judge requests (0 without a judge).
    pub batches: usize,
    /// Merges.
    pub merges: Vec<MergeRecord>,
    /// Memories whose judgement failed this pass.
    pub failed: usize,
    /// Memories whose batch was not sent (budget spent, model busy): left for a later run.
    pub deferred: usize,
}

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct DedupReport {
    /// `deterministic` or `external`.
    pub judge: &'static str,
    /// Nothing was written.
    pub dry_run: bool,
    /// Each pass.
    pub passes: Vec<PassReport>,
    /// Memories absorbed in all.
    pub absorbed: usize,
}

/// What the external judge reads.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeRequest {
    /// 1.
    pub protocol: u32,
    /// `bootstrap` or `incremental`.
    pub mode: String,
    /// What to do.
    pub instructions: String,
    /// Every memory of the batch.
    pub memories: Vec<JudgeMemory>,
    /// Each unverified memory with its candidates.
    pub pairs: Vec<JudgePair>,
}

/// A memory in a judge request.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeMemory {
    /// Id.
    pub id: String,
    /// Text.
    pub text: String,
    /// Already verified.
    pub verified: bool,
}

/// An unverified memory and its candidates.
#[derive(Clone, Debug, Serialize)]
pub struct JudgePair {
    /// The unverified memory.
    pub id: String,
    /// Candidates, most alike first.
    pub candidates: Vec<String>,
}

/// What the judge answers.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeResponse {
    /// Groups of duplicates.
    pub groups: Vec<JudgeGroup>,
    /// Unverified memories that match nothing.
    #[serde(default)]
    pub no_match_ids: Vec<String>,
}

/// One group of duplicates.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeGroup {
    /// Its members.
    pub ids: Vec<String>,
    /// The text the survivor takes.
    pub canonical_text: String,
    /// 0..=1.
    pub confidence: f32,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// The budget's name for the judge.
pub const PURPOSE: &str = "knowledge.dedup";

const INSTRUCTIONS: &str = "These are memories of a coding agent. For each entry of `pairs`, decide whether the \
unverified memory states the same lesson as any of its candidates (a conceptual duplicate, possibly worded \
differently). Group duplicates; give each group one canonical text that keeps every detail of its members. \
Reply with JSON {\"groups\":[{\"ids\":[…],\"canonical_text\":\"…\",\"confidence\":0.0-1.0,\"reason\":\"…\"}],\
\"no_match_ids\":[…]} and nothing else; every unverified id appears in a group or in no_match_ids.";

/// Checks a judge's answer against its request (see the module docs).
pub fn validate(req: &JudgeRequest, stdout: &[u8]) -> Result<JudgeResponse, String> {
    let resp: JudgeResponse = serde_json::from_slice(stdout).map_err(|e| format!("not the dedup JSON: {e}"))?;
    let known: HashMap<&str, bool> = req.memories.iter().map(|m| (m.id.as_str(), m.verified)).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, g) in resp.groups.iter().enumerate() {
        if g.ids.len() < 2 {
            return Err(format!("group {i} has fewer than two memories"));
        }
        if !(0.0..=1.0).contains(&g.confidence) {
            return Err(format!("group {i}: confidence {} outside 0..=1", g.confidence));
        }
        let text = g.canonical_text.trim();
        if text.is_empty() || text.chars().count() > MAX_TEXT || text.contains(INJECTION_OPEN) {
            return Err(format!("group {i}: canonical text empty, too long or holding injected context"));
        }
        let mut verified = 0;
        for id in &g.ids {
            let Some(v) = known.get(id.as_str()) else { return Err(format!("group {i}: unknown id {id}")) };
            if !seen.insert(id.as_str()) {
                return Err(format!("{id} is in two groups"));
            }
            verified += usize::from(*v);
        }
        if req.mode == "incremental" && verified > 1 {
            return Err(format!("group {i} merges {verified} verified memories"));
        }
        if verified == g.ids.len() {
            return Err(format!("group {i} holds no unverified memory"));
        }
    }
    for id in &resp.no_match_ids {
        if !known.contains_key(id.as_str()) {
            return Err(format!("no_match_ids: unknown id {id}"));
        }
        if !seen.insert(id.as_str()) {
            return Err(format!("{id} is both grouped and unmatched"));
        }
    }
    for p in &req.pairs {
        if !seen.contains(p.id.as_str()) {
            return Err(format!("unverified {} is not accounted for", p.id));
        }
    }
    Ok(resp)
}

fn load(journal: &Journal, max_attempts: u32) -> Result<Vec<Entry>, Error> {
    let conn = journal.store().conn();
    let mut stmt = conn
        .prepare(
            "SELECT m.id, m.content, m.project, m.occurrence_count, COALESCE(d.verified, 0), COALESCE(d.attempts, 0)
             FROM memories m LEFT JOIN dedup_state d ON d.memory_id = m.id
             WHERE m.is_deleted = 0 AND m.deprecated = 0 AND m.superseded_by IS NULL ORDER BY m.id",
        )
        .map_err(|e| Error::engram("read memories", shared::base::error::Error::sqlite("read memories", e)))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                Entry {
                    id: r.get(0)?,
                    content: r.get(1)?,
                    project: r.get(2)?,
                    occurrences: r.get(3)?,
                    verified: r.get(4)?,
                },
                r.get::<_, i64>(5)?,
            ))
        })
        .map_err(|e| Error::engram("read memories", shared::base::error::Error::sqlite("read memories", e)))?;
    let mut out = Vec::new();
    for row in rows {
        let (e, attempts) =
            row.map_err(|e| Error::engram("read memories", shared::base::error::Error::sqlite("read", e)))?;
        // A memory whose judgement kept failing is left alone.
        if e.verified || attempts < i64::from(max_attempts) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Survivor order: verified first, then seen most often, then the lowest id.
fn survivor<'e>(members: &[&'e Entry]) -> &'e Entry {
    let mut sorted = members.to_vec();
    sorted.sort_by(|a, b| b.verified.cmp(&a.verified).then(b.occurrences.cmp(&a.occurrences)).then(a.id.cmp(&b.id)));
    sorted[0]
}

fn find(parent: &mut HashMap<String, String>, x: &str) -> String {
    let p = parent.get(x).cloned().unwrap_or_else(|| x.to_owned());
    if p == x {
        return p;
    }
    let root = find(parent, &p);
    parent.insert(x.to_owned(), root.clone());
    root
}

/// Runs the pipeline (see the module docs).
pub fn run(journal: &mut Journal, config: &Config, opts: &DedupOptions, now: Ts) -> Result<DedupReport, Error> {
    let d = &config.knowledge.dedup;
    let judge = d.judge();
    let mut report = DedupReport {
        judge: if judge.enabled() { "external" } else { "deterministic" },
        dry_run: opts.dry_run,
        passes: Vec::new(),
        absorbed: 0,
    };
    let max_passes = opts.max_passes.unwrap_or(d.max_passes).max(1);
    for pass in 1..=max_passes {
        let entries = load(journal, d.max_attempts)?;
        let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
        let verified_count = entries.iter().filter(|e| e.verified).count();
        let unverified: Vec<&Entry> = entries.iter().filter(|e| !e.verified).collect();
        let bootstrap = verified_count < d.bootstrap_below;
        let mode = if bootstrap { "bootstrap" } else { "incremental" };
        let mut pass_report = PassReport {
            pass,
            mode,
            unverified: unverified.len(),
            verified: verified_count,
            pairs: 0,
            batches: 0,
            merges: Vec::new(),
            failed: 0,
            deferred: 0,
        };
        if unverified.is_empty() {
            report.passes.push(pass_report);
            break;
        }
        // Candidates of each unverified memory.
        let mut candidates: Vec<Candidates<'_>> = Vec::new();
        for u in &unverified {
            let found = similar_memories(
                journal.store(),
                &u.content,
                None,
                u.project.as_deref(),
                &[u.id.as_str()],
                d.min_similarity,
                d.top_k.max(1) * 4,
            )
            .context("find dedup candidates")?;
            let mut cands: Vec<(&Entry, f32)> = found
                .iter()
                .filter_map(|s| by_id.get(s.id.as_str()).map(|e| (*e, s.similarity)))
                .filter(|(e, _)| bootstrap || e.verified)
                .collect();
            cands.truncate(d.top_k.max(1));
            pass_report.pairs += cands.len();
            candidates.push((*u, cands));
        }
        let mut groups: Vec<(Vec<&Entry>, Option<String>, f32, String)> = Vec::new();
        let mut failed: BTreeMap<MemoryId, String> = BTreeMap::new();
        let mut deferred: BTreeSet<String> = BTreeSet::new();
        if !judge.enabled() {
            // Union of pairs at or above the merge threshold (incremental: each
            // unverified memory with its best verified match only).
            let mut parent: HashMap<String, String> = HashMap::new();
            let mut best: HashMap<String, f32> = HashMap::new();
            for (u, cands) in &candidates {
                let above: Vec<&(&Entry, f32)> = cands.iter().filter(|(_, s)| *s >= d.merge_similarity).collect();
                let chosen: Vec<&(&Entry, f32)> = if bootstrap { above } else { above.into_iter().take(1).collect() };
                for (c, s) in chosen {
                    let (a, b) = (find(&mut parent, &u.id), find(&mut parent, &c.id));
                    if a != b {
                        parent.insert(a.clone(), b.clone());
                    }
                    for id in [&u.id, &c.id] {
                        let e = best.entry(id.clone()).or_insert(0.0);
                        *e = e.max(*s);
                    }
                }
            }
            let mut components: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
            let ids: Vec<String> = best.keys().cloned().collect();
            for id in ids {
                let root = find(&mut parent, &id);
                if let Some(e) = by_id.get(id.as_str()) {
                    components.entry(root).or_default().push(e);
                }
            }
            for (_, mut members) in components {
                members.sort_by(|a, b| a.id.cmp(&b.id));
                members.dedup_by(|a, b| a.id == b.id);
                if members.len() < 2 {
                    continue;
                }
                let sim = members.iter().filter_map(|m| best.get(&m.id)).fold(0.0f32, |a, b| a.max(*b));
                groups.push((members, None, sim, format!("{:.0}% alike", sim * 100.0)));
            }
        } else {
            // Batches within the character budget, then the judge.
            let mut batch: Vec<&Candidates<'_>> = Vec::new();
            let mut chars = 0usize;
            let mut batches: Vec<Vec<&Candidates<'_>>> = Vec::new();
            for item in candidates.iter().filter(|(_, c)| !c.is_empty()) {
                let size: usize = item.0.content.chars().count()
                    + item.1.iter().map(|(c, _)| c.content.chars().count()).sum::<usize>();
                if !batch.is_empty() && chars + size > d.batch_chars {
                    batches.push(std::mem::take(&mut batch));
                    chars = 0;
                }
                chars += size;
                batch.push(item);
            }
            if !batch.is_empty() {
                batches.push(batch);
            }
            pass_report.batches = batches.len();
            for b in batches {
                let mut memories: BTreeMap<&str, JudgeMemory> = BTreeMap::new();
                let mut pairs = Vec::new();
                for (u, cands) in &b {
                    for e in std::iter::once(*u).chain(cands.iter().map(|(c, _)| *c)) {
                        memories.entry(e.id.as_str()).or_insert_with(|| JudgeMemory {
                            id: e.id.clone(),
                            text: e.content.clone(),
                            verified: e.verified,
                        });
                    }
                    pairs.push(JudgePair {
                        id: u.id.clone(),
                        candidates: cands.iter().map(|(c, _)| c.id.clone()).collect(),
                    });
                }
                // An unverified memory that is also a candidate elsewhere stays unverified.
                for p in &pairs {
                    if let Some(m) = memories.get_mut(p.id.as_str()) {
                        m.verified = false;
                    }
                }
                let req = JudgeRequest {
                    protocol: 1,
                    mode: mode.to_owned(),
                    instructions: INSTRUCTIONS.to_owned(),
                    memories: memories.into_values().collect(),
                    pairs,
                };
                if !deferred.is_empty() {
                    deferred.extend(req.pairs.iter().map(|p| p.id.clone()));
                    continue;
                }
                let mut value = serde_json::to_value(&req).unwrap_or_default();
                shared::storage::redact::redact_value(&mut value);
                let client = ModelClient::new(&judge, journal.paths());
                let wait = judge.timeout().saturating_mul(2);
                let answer = match client.ask_metered(journal.paths(), PURPOSE, wait, now, INSTRUCTIONS, &value) {
                    Err(e) => {
                        tracing::warn!(error = %e, "dedup judge not asked; its memories wait for a later run");
                        deferred.extend(req.pairs.iter().map(|p| p.id.clone()));
                        continue;
                    }
                    Ok(x) => x.answer.map_err(|e| e.to_string()).and_then(|out| validate(&req, &out)),
                };
                match answer {
                    Ok(resp) => {
                        for g in resp.groups {
                            let members: Vec<&Entry> =
                                g.ids.iter().filter_map(|id| by_id.get(id.as_str()).copied()).collect();
                            let text = shared::storage::redact::redact_text(g.canonical_text.trim()).into_owned();
                            groups.push((members, Some(text), g.confidence, g.reason));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "dedup judge failed; its memories are retried later");
                        for p in &req.pairs {
                            failed.insert(MemoryId(p.id.clone()), e.clone());
                        }
                    }
                }
            }
        }
        // Merge events, then the queue.
        let mut bodies: Vec<Body> = Vec::new();
        let mut merged_ids: BTreeSet<String> = BTreeSet::new();
        for (members, content, confidence, reason) in groups {
            let s = survivor(&members);
            let absorbed: Vec<String> = members.iter().filter(|m| m.id != s.id).map(|m| m.id.clone()).collect();
            merged_ids.extend(members.iter().map(|m| m.id.clone()));
            let content = content.filter(|c| *c != s.content);
            pass_report.merges.push(MergeRecord {
                survivor: s.id.clone(),
                absorbed: absorbed.clone(),
                content: content.clone(),
                confidence,
                reason: reason.clone(),
            });
            bodies.push(Body::MemoriesMerged(MemoriesMerged {
                survivor: MemoryId(s.id.clone()),
                absorbed: absorbed.into_iter().map(MemoryId).collect(),
                content,
                mode: mode.to_owned(),
                pass,
                by: report.judge.to_owned(),
                confidence: Some(confidence),
                reason,
            }));
        }
        let verified: Vec<MemoryId> = unverified
            .iter()
            .filter(|u| {
                !merged_ids.contains(&u.id)
                    && !failed.contains_key(&MemoryId(u.id.clone()))
                    && !deferred.contains(&u.id)
            })
            .map(|u| MemoryId(u.id.clone()))
            .collect();
        pass_report.failed = failed.len();
        pass_report.deferred = deferred.len();
        let merges = pass_report.merges.len();
        report.absorbed += pass_report.merges.iter().map(|m| m.absorbed.len()).sum::<usize>();
        report.passes.push(pass_report);
        if opts.dry_run {
            break;
        }
        bodies.push(Body::DedupChecked(DedupChecked { verified, failed, requeued: Vec::new() }));
        let events: Vec<_> = bodies.into_iter().map(|b| journal.event(now, None, b)).collect();
        journal.append(&events).context("append the dedup results")?;
        if merges == 0 {
            break;
        }
    }
    Ok(report)
}

/// The report as text.
pub fn render(r: &DedupReport) -> String {
    let mut out = String::new();
    let verb = if r.dry_run { "would merge" } else { "merged" };
    for p in &r.passes {
        out.push_str(&format!(
            "pass {} ({}, {} judge): {} unverified against {} verified, {} candidate pair(s){}; {verb} {} group(s){}\n",
            p.pass,
            p.mode,
            r.judge,
            p.unverified,
            p.verified,
            p.pairs,
            if p.batches > 0 { format!(" in {} batch(es)", p.batches) } else { String::new() },
            p.merges.len(),
            if p.failed > 0 { format!("; {} failed (retried next run)", p.failed) } else { String::new() },
        ));
        if p.deferred > 0 {
            out.push_str(&format!("  {} not sent to the judge (budget spent or model busy): next run\n", p.deferred));
        }
        for m in &p.merges {
            out.push_str(&format!(
                "  {} <- {} ({:.2}: {})\n",
                m.survivor,
                m.absorbed.join(", "),
                m.confidence,
                m.reason
            ));
        }
    }
    out.push_str(&format!("{} memor{} absorbed\n", r.absorbed, if r.absorbed == 1 { "y" } else { "ies" }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::base::paths::Paths;
    use shared::storage::event::{Event, MemoryAdded};

    fn journal_with(texts: &[&str]) -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().expect("tmp");
        let mut j = shared::projection::open(&Paths::at(dir.path()), "test").expect("journal");
        let events: Vec<Event> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                Event::new(
                    Ts(1_000 + i as i64),
                    "test",
                    None,
                    Body::MemoryAdded(MemoryAdded {
                        memory_id: MemoryId(format!("mem_{i}")),
                        content: (*t).to_owned(),
                        memory_type: shared::storage::event::MemoryType::Fact,
                        importance: 0.5,
                        ..Default::default()
                    }),
                )
            })
            .collect();
        j.append(&events).expect("append");
        (dir, j)
    }

    fn live(j: &Journal) -> Vec<String> {
        let mut stmt = j.store().conn().prepare("SELECT id FROM memories WHERE deprecated = 0 ORDER BY id").expect("q");
        stmt.query_map([], |r| r.get(0)).expect("q").map(|r| r.expect("row")).collect()
    }

    #[test]
    fn bootstrap_merges_exact_duplicates_and_verifies_the_rest() {
        let (_d, mut j) = journal_with(&[
            "Use pnpm, not npm, in this repo.",
            "In this repo use pnpm not npm",
            "Run cargo fmt before committing.",
            "Use pnpm not npm in this repo!",
        ]);
        let config = Config::default();
        let dry = run(&mut j, &config, &DedupOptions { dry_run: true, ..Default::default() }, Ts(9_000)).expect("dry");
        assert_eq!(dry.absorbed, 2);
        assert_eq!(live(&j).len(), 4, "a dry run writes nothing");
        let r = run(&mut j, &config, &DedupOptions::default(), Ts(9_000)).expect("run");
        assert_eq!(r.passes[0].mode, "bootstrap");
        assert_eq!(r.passes[0].merges.len(), 1);
        assert_eq!(r.passes[0].merges[0].survivor, "mem_0", "lowest id among equals");
        assert_eq!(live(&j), ["mem_0", "mem_2"]);
        let m = j.store().memory("mem_0").expect("q").expect("exists");
        assert_eq!(m.occurrence_count, 3);
        // Everything is verified now (the survivor after the next pass): a rerun merges nothing.
        let again = run(&mut j, &config, &DedupOptions::default(), Ts(10_000)).expect("again");
        assert_eq!(again.absorbed, 0);
        let log: i64 = j.store().conn().query_row("SELECT COUNT(*) FROM memory_merges", [], |r| r.get(0)).expect("q");
        assert_eq!(log, 1);
    }

    #[test]
    fn an_external_judge_merges_paraphrases_and_a_failing_one_is_retried() {
        let texts = ["Always run the linter before you commit", "Run the linter prior to committing, always"];
        let (_d, mut j) = journal_with(&texts);
        let mut config = Config::default();
        assert_eq!(
            run(&mut j, &config, &DedupOptions { dry_run: true, ..Default::default() }, Ts(5)).expect("x").absorbed,
            0
        );
        config.knowledge.dedup.command = vec!["sh".into(), "-c".into(), "exit 3".into()];
        let r = run(&mut j, &config, &DedupOptions::default(), Ts(9_000)).expect("run");
        assert_eq!((r.judge, r.passes[0].failed, r.absorbed), ("external", 2, 0));
        let attempts: i64 =
            j.store().conn().query_row("SELECT MAX(attempts) FROM dedup_state", [], |r| r.get(0)).expect("q");
        assert_eq!(attempts, 1);
        let answer = r#"{"groups":[{"ids":["mem_0","mem_1"],"canonical_text":"Always run the linter before committing.","confidence":0.9,"reason":"same lesson"}],"no_match_ids":[]}"#;
        config.knowledge.dedup.command = vec!["sh".into(), "-c".into(), format!("cat > /dev/null; echo '{answer}'")];
        let r = run(&mut j, &config, &DedupOptions::default(), Ts(10_000)).expect("run");
        assert_eq!(r.absorbed, 1);
        let m = j.store().memory("mem_0").expect("q").expect("exists");
        assert_eq!(m.content, "Always run the linter before committing.");
        let by: String = j.store().conn().query_row("SELECT by FROM memory_merges", [], |r| r.get(0)).expect("q");
        assert_eq!(by, "external");
    }

    #[test]
    fn a_judge_answer_is_validated_strictly() {
        let req = JudgeRequest {
            protocol: 1,
            mode: "incremental".into(),
            instructions: String::new(),
            memories: vec![
                JudgeMemory { id: "a".into(), text: "x".into(), verified: true },
                JudgeMemory { id: "b".into(), text: "y".into(), verified: true },
                JudgeMemory { id: "u".into(), text: "z".into(), verified: false },
            ],
            pairs: vec![JudgePair { id: "u".into(), candidates: vec!["a".into(), "b".into()] }],
        };
        let ok = br#"{"groups":[{"ids":["u","a"],"canonical_text":"x","confidence":0.9,"reason":"same"}],"no_match_ids":[]}"#;
        assert!(validate(&req, ok).is_ok());
        for (bad, why) in [
            (r#"{"groups":[{"ids":["u","a","b"],"canonical_text":"x","confidence":0.9}]}"#, "verified"),
            (r#"{"groups":[{"ids":["u"],"canonical_text":"x","confidence":0.9}]}"#, "fewer than two"),
            (r#"{"groups":[{"ids":["u","q"],"canonical_text":"x","confidence":0.9}]}"#, "unknown id"),
            (r#"{"groups":[{"ids":["u","a"],"canonical_text":"x","confidence":1.5}]}"#, "confidence"),
            (r#"{"groups":[{"ids":["u","a"],"canonical_text":" ","confidence":0.5}]}"#, "canonical text"),
            (r#"{"groups":[],"no_match_ids":[]}"#, "not accounted"),
            (r#"{"groups":[{"ids":["u","a"],"canonical_text":"x","confidence":0.5}],"no_match_ids":["u"]}"#, "both"),
            (r#"{"groups":[],"extra":1}"#, "not the dedup JSON"),
        ] {
            let err = validate(&req, bad.as_bytes()).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
