//! The deterministic continuity scorer: how much a finished session used the
//! memories it was given, and what it needed but was not given. No LLM, no
//! clock, no IO: a [`SessionRecord`] in, an [`Assessment`] out.
//!
//! # Evidence of use (injected memories)
//!
//! Each memory's text gives distinctive [`terms`](crate::terms) — paths (×2.0),
//! identifiers (×1.5), quantities (×1.2), words (×1.0) and the words inside
//! identifiers and paths (×0.5) — each further weighted by the square of its
//! normalised IDF over the live memories, `(idf(df) / idf(1))²` with BM25's
//! IDF: a term only this memory has weighs 1, a term a quarter of the
//! memories share about 0.15; terms whose normalised IDF is below 0.15 are
//! dropped. Words inside identifiers only count when a whole term of the same
//! memory matched too (they corroborate, never suffice).
//!
//! The session is read in time order. A memory counts as *used* when one of
//! its terms appears, **after it was injected**, in something the agent did:
//!
//! | channel | weight |
//! |---|---|
//! | an edit (`code.edit` path, or the arguments of an editing tool call) | 1.0 |
//! | another tool call's arguments, a file read | 0.8 |
//! | the assistant's text | 0.6 |
//! | the assistant's reasoning | 0.4 |
//!
//! and only when the agent could not have had the term from elsewhere: a term
//! already present in the session before the injection, or supplied before
//! the event by the user (prompts), a compaction summary, system text, the
//! rankers' query, or a tool result, is not evidence. Engram's own injected
//! context is ignored entirely. The strength of use is
//! `S = Σ_terms weight · best channel · (1 + 0.25 · min(3, uses − 1))` and the
//! textual relevance is `1 − exp(−S / 2)` (one unique identifier reused in an
//! edit ≈ 0.7; one rare word in prose ≈ 0.25).
//!
//! # Evidence of need (memories not injected)
//!
//! The same matching over the whole session, except that what tool results
//! returned *does* count (the agent had to go and find what the memory held),
//! while terms supplied by the user or by an injected memory do not; strengths
//! below 0.5 are noise. Need relevance is `0.6 · (1 − exp(−S / 2))`, at most
//! the "missed" label.
//!
//! # Labels
//!
//! * Explicit feedback (`memory.feedback` in the session) is blended in:
//!   `(1 − w)·textual + w·feedback`, `w` = 0.8 from the user, 0.6 from the
//!   agent, 0.5 otherwise.
//! * Injected: the relevance; +0.1 (capped at 1) if a later prompt's FTS search
//!   matched it again (not the search of the prompt that injected it); −0.1
//!   (floored at 0) if not and the session score is below 0.3.
//! * Not injected: the larger of the need relevance and the FTS label (0.6 when
//!   later prompts matched it twice or more, 0.3 once, else 0).
//! * Negatives override: superseded or deprecated −0.3; forgotten within 24 h
//!   after being injected −0.5; forgotten otherwise −0.3.
//!
//! Labels are recorded for the whole labelled pool (both rankers' top 10 and
//! the injected memories of every ranking in the session, 0 without
//! evidence) and for any other candidate or FTS match with a non-zero label.
//!
//! # Session score and confidence
//!
//! `precision` = mean positive relevance of the injected memories;
//! `coverage` = used / (used + missed), missed summing the non-injected labels
//! of at least 0.3; score = (precision + coverage) / 2 (0.5 when nothing was
//! injected or needed, 0 when nothing was injected but something was needed).
//! Confidence measures how much evidence there was:
//! `E = 0.15·work + 0.25·prompts + 0.5·feedback + 0.2·fts` (work = agent
//! actions after the first injection, capped at 40; prompts at 8; feedback at
//! 4; FTS searches at 10) and `confidence = 1 − exp(−E / 1.2)`: about six
//! actions and two prompts reach the 0.6 that training and α require.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use shared::base::ids::{MemoryId, SessionKey};
use shared::domain::training::data::RecordedRanking;
use shared::storage::event::{Body, Event, origin};

use crate::terms::{Kind, Term, TextIndex, memory_terms};

/// Name of this scorer in `session.scored`.
pub const SCORER: &str = "continuity-v1";
/// Name when an external judge's verdict was blended in.
pub const SCORER_WITH_JUDGE: &str = "continuity-v1+judge";

/// Label of a superseded or deprecated memory.
pub const SUPERSEDED_LABEL: f32 = -0.3;
/// Label of a memory forgotten within a day of being injected.
pub const FORGOTTEN_LABEL: f32 = -0.5;
/// Label of a memory not injected but matched by later prompts twice or more.
pub const MISSED_LABEL: f32 = 0.6;
/// Label of a memory not injected and matched by a later prompt once.
pub const MATCHED_ONCE_LABEL: f32 = 0.3;
/// A label at least this high counts as "used" (injected) or "needed" (not injected).
pub const USED_THRESHOLD: f32 = 0.3;
/// Ranks up to this count as a ranker's top of the labelled pool.
pub const POOL_TOP: u32 = 10;

const DAY_MS: i64 = 86_400_000;
const STRENGTH_SCALE: f32 = 2.0;
const MIN_NEED_STRENGTH: f32 = 0.5;
const MIN_IDF: f32 = 0.15;
const MAX_TERMS: usize = 48;

/// A prompt's FTS matches during the session (`fts.hits`).
#[derive(Clone, Debug, PartialEq)]
pub struct FtsHitRecord {
    /// When.
    pub at_ms: i64,
    /// The ranking served for the same prompt, if linked.
    pub ranking_id: Option<String>,
    /// Memories matched.
    pub memory_ids: Vec<MemoryId>,
}

/// Explicit feedback given during the session (`memory.feedback`).
#[derive(Clone, Debug, PartialEq)]
pub struct FeedbackRecord {
    /// Which memory.
    pub memory_id: MemoryId,
    /// 0..=1.
    pub relevance: f32,
    /// `user`, `agent`, `judge`, …
    pub by: String,
}

/// What the scorer needs to know about a memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryFacts {
    /// Current text (empty once forgotten).
    pub content: String,
    /// Deprecated or superseded.
    pub superseded: bool,
    /// When it was forgotten, if it was.
    pub forgotten_ms: Option<i64>,
}

/// Document frequencies over the live memories, for IDF.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Corpus {
    /// Live memories.
    pub live_memories: u64,
    /// Memories containing each term (predictor tokenization).
    pub df: HashMap<String, u64>,
}

impl Corpus {
    /// `idf(df) / idf(1)` in `[0, 1]` (an unknown term counts as unique).
    pub fn idf_norm(&self, term: &str) -> f32 {
        let df = self.df.get(term).copied().unwrap_or(0).max(1);
        let n = self.live_memories.max(df).max(1);
        let top = shared::base::text::idf(1, n);
        if top <= 0.0 { 1.0 } else { (shared::base::text::idf(df, n) / top).clamp(0.0, 1.0) }
    }
}

/// Everything the continuity scorer reads about one finished session.
#[derive(Clone, Debug, Default)]
pub struct SessionRecord {
    /// The session.
    pub session_key: SessionKey,
    /// Its project.
    pub project: Option<String>,
    /// Content events (messages, tool calls and results, reads, edits) in log order.
    pub events: Vec<Event>,
    /// Rankings served in the session, oldest first.
    pub rankings: Vec<RecordedRanking>,
    /// FTS matches of the session's prompts.
    pub fts_hits: Vec<FtsHitRecord>,
    /// Explicit feedback given in the session.
    pub feedback: Vec<FeedbackRecord>,
    /// Facts about every memory named above.
    pub memories: BTreeMap<MemoryId, MemoryFacts>,
    /// IDF statistics.
    pub corpus: Corpus,
}

/// An external judge's verdict (seed 002 "Improved Continuity Scoring").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JudgeVerdict {
    /// Overall continuity score, 0..=1.
    pub overall_score: f32,
    /// The judge's confidence, 0..=1.
    pub confidence: f32,
    /// Relevance of injected memories, 0..=1.
    pub per_memory_scores: BTreeMap<MemoryId, f32>,
    /// Topics the user had to re-explain.
    pub missing_topics: Vec<String>,
    /// Times the user had to re-explain something.
    pub novel_context_count: u32,
    /// The judge's explanation.
    pub reasoning: String,
}

/// How the evidence on one memory came out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryEvidence {
    /// First injection: when and by which ranking.
    pub injected: Option<(i64, String)>,
    /// In a ranker's top 10 or injected, in some ranking of the session.
    pub in_labelled_pool: bool,
    /// Strength of use (injected) or need (not injected), see the module docs.
    pub strength: f32,
    /// Matched terms with their kind and best channel weight, strongest first.
    pub matched: Vec<(String, Kind, f32)>,
    /// FTS matches that count (after the injection for injected memories).
    pub fts_hits: u32,
    /// Mean explicit feedback and its weight.
    pub feedback: Option<(f32, f32)>,
}

/// Session-level counts behind the confidence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvidenceCounts {
    /// Agent actions (messages, tool calls, reads, edits) after the first injection.
    pub work: u32,
    /// User prompts.
    pub prompts: u32,
    /// FTS searches recorded.
    pub fts_searches: u32,
    /// Explicit feedback events.
    pub feedback: u32,
}

/// The evidence gathered from a session, before labels are set.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// Per memory (every candidate, FTS match and feedback target).
    pub memories: BTreeMap<MemoryId, MemoryEvidence>,
    /// Session counts.
    pub counts: EvidenceCounts,
}

/// The outcome of scoring a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assessment {
    /// Continuity score, 0..=1.
    pub score: f32,
    /// Confidence, 0..=1.
    pub confidence: f32,
    /// Memories injected.
    pub memories_recalled: u32,
    /// Injected memories with a label of at least 0.3.
    pub memories_used: u32,
    /// Memories not injected but needed (label of at least 0.3).
    pub novel_context_count: u32,
    /// Relevance judged from the transcript (injected, and needed ones).
    pub relevance: BTreeMap<MemoryId, f32>,
    /// Final training labels.
    pub labels: BTreeMap<MemoryId, f32>,
    /// Both rankers' top 10 and the injected memories, over all rankings.
    pub labelled_pool: BTreeSet<MemoryId>,
    /// Share of injected memories matched again by a later prompt's FTS search.
    pub fts_overlap: Option<f32>,
    /// Explanation.
    pub reasoning: String,
    /// [`SCORER`] or [`SCORER_WITH_JUDGE`].
    pub scorer: String,
}

/// What an event is to the scorer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Channel {
    /// Something the agent did, with its weight.
    Work(f32),
    /// Text the agent received from the user (prompts, summaries, system text, the rankers' query).
    Supplied,
    /// Text a tool returned: what the agent found by itself.
    Found,
    /// Not read (Engram's own injected context, metadata).
    Ignored,
}

const EDIT_TOOL_WORDS: [&str; 5] = ["edit", "write", "patch", "replace", "create"];
const MAX_EVENT_TEXT: usize = 64 * 1024;

fn json_strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push(' ');
            out.push_str(s);
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| json_strings(v, out)),
        serde_json::Value::Number(n) => {
            out.push(' ');
            out.push_str(&n.to_string());
        }
        _ => {}
    }
}

/// The channel and text of a content event.
fn classify(event: &Event, edit_calls: &HashSet<&str>) -> (Channel, String) {
    match &event.body {
        Body::MsgIn(m) if m.origin == origin::ENGRAM || m.origin == origin::HOOK => (Channel::Ignored, String::new()),
        Body::MsgIn(m) => (Channel::Supplied, m.text.clone()),
        Body::MsgOut(m) => (Channel::Work(if m.part == "reasoning" { 0.4 } else { 0.6 }), m.text.clone()),
        Body::ToolCall(t) => {
            let name = t.tool.to_lowercase();
            let edit = edit_calls.contains(t.call_id.as_str()) || EDIT_TOOL_WORDS.iter().any(|w| name.contains(w));
            let mut text = String::new();
            json_strings(&t.args, &mut text);
            (Channel::Work(if edit { 1.0 } else { 0.8 }), text)
        }
        Body::ToolResult(t) => (Channel::Found, format!("{} {}", t.stdout, t.stderr)),
        Body::CodeRead(c) => (Channel::Work(0.8), c.file.clone()),
        Body::CodeEdit(c) => {
            let mut text = c.file.clone();
            if let Some(to) = &c.move_to {
                text.push(' ');
                text.push_str(to);
            }
            (Channel::Work(1.0), text)
        }
        _ => (Channel::Ignored, String::new()),
    }
}

fn cut(text: &str) -> &str {
    shared::storage::store::cap(text, MAX_EVENT_TEXT)
}

struct Tracked {
    id: MemoryId,
    terms: Vec<(Term, f32)>,
    injected: Option<(i64, String)>,
    /// Per term: best channel weight and number of events.
    hits: HashMap<usize, (f32, u32)>,
}

/// Gathers the evidence of a session (see the module docs).
pub fn gather(record: &SessionRecord) -> Evidence {
    // Injections and the labelled pool.
    let mut injected: BTreeMap<MemoryId, (i64, String)> = BTreeMap::new();
    let mut pool: BTreeSet<MemoryId> = BTreeSet::new();
    let mut candidates: BTreeSet<MemoryId> = BTreeSet::new();
    for r in &record.rankings {
        for c in &r.candidates {
            candidates.insert(c.memory_id.clone());
            if c.injected {
                injected.entry(c.memory_id.clone()).or_insert((r.served_ms, r.ranking_id.clone()));
            }
            if c.injected || c.baseline_rank <= POOL_TOP || c.predictor_rank.is_some_and(|p| p <= POOL_TOP) {
                pool.insert(c.memory_id.clone());
            }
        }
    }
    let mut ids: BTreeSet<MemoryId> = candidates;
    ids.extend(record.fts_hits.iter().flat_map(|h| h.memory_ids.iter().cloned()));
    ids.extend(record.feedback.iter().map(|f| f.memory_id.clone()));

    let mut tracked: Vec<Tracked> = ids
        .iter()
        .filter_map(|id| {
            let facts = record.memories.get(id)?;
            let mut terms: Vec<(Term, f32)> = memory_terms(&facts.content)
                .into_iter()
                .filter_map(|t| {
                    let idf = record.corpus.idf_norm(&t.text);
                    (idf >= MIN_IDF).then(|| {
                        let w = t.kind.weight() * idf * idf;
                        (t, w)
                    })
                })
                .collect();
            terms.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            terms.truncate(MAX_TERMS);
            Some(Tracked { id: id.clone(), terms, injected: injected.get(id).cloned(), hits: HashMap::new() })
        })
        .collect();
    let mut term_map: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    for (mi, m) in tracked.iter().enumerate() {
        for (ti, (t, _)) in m.terms.iter().enumerate() {
            term_map.entry(t.text.clone()).or_default().push((mi, ti));
        }
    }
    let mut schedule: Vec<(i64, usize)> =
        tracked.iter().enumerate().filter_map(|(i, m)| m.injected.as_ref().map(|(t, _)| (*t, i))).collect();
    schedule.sort();
    let first_injection = schedule.first().map(|(t, _)| *t);

    let edit_calls: HashSet<&str> = record
        .events
        .iter()
        .filter_map(|e| match &e.body {
            Body::CodeEdit(c) => c.call_id.as_deref(),
            _ => None,
        })
        .collect();
    // The timeline: content events, and the rankings' query texts (the
    // session-context or prompt the agent had anyway) as supplied text.
    let mut timeline: Vec<(i64, usize, Channel, String, bool)> = Vec::with_capacity(record.events.len());
    for r in &record.rankings {
        timeline.push((r.served_ms, timeline.len(), Channel::Supplied, r.query.clone(), false));
    }
    for event in &record.events {
        let (channel, text) = classify(event, &edit_calls);
        let prompt = matches!(&event.body, Body::MsgIn(m) if m.is_user_prompt());
        if channel != Channel::Ignored || prompt {
            timeline.push((event.ts.0, timeline.len(), channel, text, prompt));
        }
    }
    timeline.sort_by_key(|item| (item.0, item.1));

    let mut counts = EvidenceCounts::default();
    let mut first_seen: HashMap<String, i64> = HashMap::new();
    let mut supplied: HashSet<String> = HashSet::new();
    let mut found: HashSet<String> = HashSet::new();
    let mut injected_terms: HashSet<String> = HashSet::new();
    let mut next_injection = 0usize;
    for (ts, _, channel, text, prompt) in timeline {
        while next_injection < schedule.len() && schedule[next_injection].0 <= ts {
            let mi = schedule[next_injection].1;
            injected_terms.extend(tracked[mi].terms.iter().map(|(t, _)| t.text.clone()));
            next_injection += 1;
        }
        if prompt {
            counts.prompts += 1;
        }
        if channel == Channel::Ignored {
            continue;
        }
        let index = TextIndex::new(cut(&text));
        match channel {
            Channel::Work(weight) => {
                if first_injection.is_none_or(|t| ts >= t) {
                    counts.work += 1;
                }
                let mut credited: HashSet<(usize, usize)> = HashSet::new();
                for token in index.tokens() {
                    let Some(entries) = term_map.get(token) else { continue };
                    for &(mi, ti) in entries {
                        let m = &tracked[mi];
                        let counts_as_evidence = match &m.injected {
                            Some((at, _)) if ts >= *at => {
                                first_seen.get(token).is_none_or(|&s| s >= *at)
                                    && !supplied.contains(token)
                                    && !found.contains(token)
                            }
                            Some(_) => false,
                            None => !supplied.contains(token) && !injected_terms.contains(token),
                        };
                        if counts_as_evidence && credited.insert((mi, ti)) {
                            let hit = tracked[mi].hits.entry(ti).or_insert((0.0, 0));
                            hit.0 = hit.0.max(weight);
                            hit.1 += 1;
                        }
                    }
                }
            }
            Channel::Supplied => supplied.extend(index.tokens().map(str::to_owned)),
            Channel::Found => found.extend(index.tokens().map(str::to_owned)),
            Channel::Ignored => {}
        }
        for token in index.tokens() {
            first_seen.entry(token.to_owned()).or_insert(ts);
        }
    }

    counts.fts_searches = u32::try_from(record.fts_hits.len()).unwrap_or(u32::MAX);
    counts.feedback = u32::try_from(record.feedback.len()).unwrap_or(u32::MAX);
    let mut memories = BTreeMap::new();
    for m in tracked {
        let mut matched: Vec<(String, Kind, f32)> = Vec::new();
        let mut strength = 0.0f32;
        // Words inside identifiers and paths only corroborate a match of a whole term.
        let corroborated = m.hits.keys().any(|&ti| m.terms[ti].0.kind != Kind::Part);
        for (&ti, &(channel, uses)) in &m.hits {
            let (term, weight) = &m.terms[ti];
            if term.kind == Kind::Part && !corroborated {
                continue;
            }
            let repeat = 1.0 + 0.25 * (uses.saturating_sub(1).min(3)) as f32;
            let s = weight * channel * repeat;
            strength += s;
            matched.push((term.text.clone(), term.kind, s));
        }
        matched.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        let fts_hits = record
            .fts_hits
            .iter()
            .filter(|h| h.memory_ids.contains(&m.id))
            .filter(|h| match &m.injected {
                None => true,
                Some((at, by)) => match &h.ranking_id {
                    Some(r) => h.at_ms >= *at && r != by,
                    None => h.at_ms > *at,
                },
            })
            .count();
        let fb: Vec<&FeedbackRecord> = record.feedback.iter().filter(|f| f.memory_id == m.id).collect();
        let feedback = (!fb.is_empty()).then(|| {
            let mean = fb.iter().map(|f| f.relevance.clamp(0.0, 1.0)).sum::<f32>() / fb.len() as f32;
            let w = fb.iter().map(|f| feedback_weight(&f.by)).fold(0.0f32, f32::max);
            (mean, w)
        });
        memories.insert(
            m.id.clone(),
            MemoryEvidence {
                in_labelled_pool: pool.contains(&m.id),
                injected: m.injected,
                strength,
                matched,
                fts_hits: u32::try_from(fts_hits).unwrap_or(u32::MAX),
                feedback,
            },
        );
    }
    // Pool members whose text is gone still get a label.
    for id in pool {
        memories.entry(id.clone()).or_insert_with(|| MemoryEvidence {
            injected: injected.get(&id).cloned(),
            in_labelled_pool: true,
            ..MemoryEvidence::default()
        });
    }
    Evidence { memories, counts }
}

fn feedback_weight(by: &str) -> f32 {
    match by {
        "user" => 0.8,
        "agent" => 0.6,
        _ => 0.5,
    }
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

/// Confidence from the session's evidence counts (see the module docs).
pub fn confidence(c: &EvidenceCounts) -> f32 {
    let e = 0.15 * c.work.min(40) as f32
        + 0.25 * c.prompts.min(8) as f32
        + 0.5 * c.feedback.min(4) as f32
        + 0.2 * c.fts_searches.min(10) as f32;
    round3(1.0 - (-e / 1.2).exp())
}

/// Textual relevance of a used (injected) memory from its strength.
pub fn use_relevance(strength: f32) -> f32 {
    1.0 - (-strength.max(0.0) / STRENGTH_SCALE).exp()
}

/// Need relevance of a memory that was not injected, from its strength.
pub fn need_relevance(strength: f32) -> f32 {
    if strength < MIN_NEED_STRENGTH { 0.0 } else { MISSED_LABEL * use_relevance(strength) }
}

/// Sets relevance, labels, score and confidence from the evidence, blending a
/// judge's verdict in when there is one.
pub fn assess(record: &SessionRecord, evidence: &Evidence, judge: Option<&JudgeVerdict>) -> Assessment {
    let judge_weight = judge.map_or(0.0, |j| 0.5 * j.confidence.clamp(0.0, 1.0));
    let mut relevance: BTreeMap<MemoryId, f32> = BTreeMap::new();
    let mut base: BTreeMap<MemoryId, f32> = BTreeMap::new();
    let (mut used, mut missed, mut n_injected) = (0.0f32, 0.0f32, 0u32);
    for (id, ev) in &evidence.memories {
        let textual = if ev.injected.is_some() { use_relevance(ev.strength) } else { need_relevance(ev.strength) };
        let mut r = match ev.feedback {
            Some((fb, w)) => (1.0 - w) * textual + w * fb,
            None => textual,
        };
        if ev.injected.is_some() {
            if let Some(j) = judge.and_then(|j| j.per_memory_scores.get(id)) {
                r = (1.0 - judge_weight) * r + judge_weight * j.clamp(0.0, 1.0);
            }
            n_injected += 1;
            used += r.max(0.0);
            relevance.insert(id.clone(), round3(r));
            base.insert(id.clone(), r);
        } else {
            let fts = match ev.fts_hits {
                0 => 0.0,
                1 => MATCHED_ONCE_LABEL,
                _ => MISSED_LABEL,
            };
            if r > 0.0 {
                relevance.insert(id.clone(), round3(r));
            }
            let l = r.max(fts);
            if l >= USED_THRESHOLD {
                missed += l;
            }
            base.insert(id.clone(), l);
        }
    }
    let precision = if n_injected > 0 { used / n_injected as f32 } else { 0.0 };
    let coverage = if used + missed > 0.0 { used / (used + missed) } else { 0.0 };
    let mut score = match (n_injected, missed > 0.0) {
        (0, false) => 0.5,
        (0, true) => 0.0,
        _ => 0.5 * precision + 0.5 * coverage,
    };
    if let Some(j) = judge {
        score = (1.0 - judge_weight) * score + judge_weight * j.overall_score.clamp(0.0, 1.0);
    }

    let mut labels = BTreeMap::new();
    let mut pool = BTreeSet::new();
    let (mut memories_used, mut novel, mut fts_confirmed) = (0u32, 0u32, 0u32);
    for (id, ev) in &evidence.memories {
        let mut l = base.get(id).copied().unwrap_or(0.0);
        if ev.injected.is_some() {
            if ev.fts_hits > 0 {
                l = (l + 0.1).min(1.0);
                fts_confirmed += 1;
            } else if score < 0.3 {
                l = (l - 0.1).max(0.0);
            }
        }
        let facts = record.memories.get(id);
        if let Some(forgotten) = facts.and_then(|f| f.forgotten_ms) {
            l = match &ev.injected {
                Some((at, _)) if (0..=DAY_MS).contains(&forgotten.saturating_sub(*at)) => FORGOTTEN_LABEL,
                _ => SUPERSEDED_LABEL,
            };
        } else if facts.is_some_and(|f| f.superseded) {
            l = SUPERSEDED_LABEL;
        }
        let l = round3(l);
        if ev.injected.is_some() && l >= USED_THRESHOLD {
            memories_used += 1;
        }
        if ev.injected.is_none() && l >= USED_THRESHOLD {
            novel += 1;
        }
        if ev.in_labelled_pool {
            pool.insert(id.clone());
            labels.insert(id.clone(), l);
        } else if l != 0.0 {
            labels.insert(id.clone(), l);
        }
    }
    let det_confidence = confidence(&evidence.counts);
    let confidence = match judge {
        Some(j) => round3(1.0 - (1.0 - det_confidence) * (1.0 - 0.5 * j.confidence.clamp(0.0, 1.0))),
        None => det_confidence,
    };
    let mut reasoning = explain(evidence, &labels, n_injected, memories_used, novel, det_confidence);
    if let Some(j) = judge {
        let _ = write!(reasoning, " | judge ({:.2} confidence): {}", j.confidence, j.reasoning.trim());
    }
    Assessment {
        score: round3(score.clamp(0.0, 1.0)),
        confidence,
        memories_recalled: n_injected,
        memories_used,
        novel_context_count: judge.map_or(novel, |j| novel.max(j.novel_context_count)),
        relevance,
        labels,
        labelled_pool: pool,
        fts_overlap: (n_injected > 0).then(|| round3(fts_confirmed as f32 / n_injected as f32)),
        reasoning,
        scorer: if judge.is_some() { SCORER_WITH_JUDGE } else { SCORER }.to_owned(),
    }
}

/// Scores a session without a judge: [`gather`] then [`assess`].
pub fn score(record: &SessionRecord) -> Assessment {
    assess(record, &gather(record), None)
}

fn describe(ev: &MemoryEvidence) -> String {
    let mut parts: Vec<String> =
        ev.matched.iter().take(3).map(|(t, k, _)| format!("{} {}", k.name(), shorten(t, 40))).collect();
    if ev.fts_hits > 0 {
        parts.push(format!("{} later FTS match{}", ev.fts_hits, if ev.fts_hits == 1 { "" } else { "es" }));
    }
    if let Some((fb, _)) = ev.feedback {
        parts.push(format!("feedback {fb:.2}"));
    }
    parts.join(", ")
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn explain(
    evidence: &Evidence,
    labels: &BTreeMap<MemoryId, f32>,
    injected: u32,
    used: u32,
    novel: u32,
    confidence: f32,
) -> String {
    let mut out = format!("{used} of {injected} injected memories used");
    let label = |id: &MemoryId| labels.get(id).copied().unwrap_or(0.0);
    let mut used_list: Vec<(&MemoryId, &MemoryEvidence)> =
        evidence.memories.iter().filter(|(id, ev)| ev.injected.is_some() && label(id) >= USED_THRESHOLD).collect();
    used_list.sort_by(|a, b| label(b.0).total_cmp(&label(a.0)).then_with(|| a.0.cmp(b.0)));
    if !used_list.is_empty() {
        let items: Vec<String> =
            used_list.iter().take(4).map(|(id, ev)| format!("{id} {:.2}: {}", label(id), describe(ev))).collect();
        let _ = write!(out, " ({})", items.join("; "));
    }
    let mut needed: Vec<(&MemoryId, &MemoryEvidence)> =
        evidence.memories.iter().filter(|(id, ev)| ev.injected.is_none() && label(id) >= USED_THRESHOLD).collect();
    needed.sort_by(|a, b| label(b.0).total_cmp(&label(a.0)).then_with(|| a.0.cmp(b.0)));
    let _ = write!(out, "; {novel} needed but not injected");
    if !needed.is_empty() {
        let items: Vec<String> =
            needed.iter().take(4).map(|(id, ev)| format!("{id} {:.2}: {}", label(id), describe(ev))).collect();
        let _ = write!(out, " ({})", items.join("; "));
    }
    let negative = labels.values().filter(|&&l| l < 0.0).count();
    if negative > 0 {
        let _ = write!(out, "; {negative} superseded or forgotten");
    }
    let c = &evidence.counts;
    let _ = write!(
        out,
        "; evidence: {} agent actions after injection, {} prompts, {} FTS searches, {} feedback → confidence {confidence:.2}",
        c.work, c.prompts, c.fts_searches, c.feedback
    );
    out
}
