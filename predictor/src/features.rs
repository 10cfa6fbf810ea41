//! Raw per-candidate and per-session signals, and their pure, documented encoding into model inputs.
//!
//! # Candidate features
//!
//! [`encode_candidates`] turns the list of [`CandidateSignals`] into a
//! `NUM_FEATURES × n` matrix (one column per candidate). Some features are
//! *list-relative*: they depend on the other candidates of the same list,
//! because under a listwise softmax only differences inside a list matter and
//! a scale that is comparable across lists trains better. The encoding is a
//! pure function of the whole list.
//!
//! | # | name | transform |
//! |---|---|---|
//! | 0 | `log_age` | `ln(1 + age_days) / ln(366)` (≈ 1 at a year) |
//! | 1 | `recency_rank` | `1 / log2(1 + r)`, `r` = 1-based rank by ascending age (ties by index) |
//! | 2 | `importance` | clamped to `[0, 1]` |
//! | 3 | `log_access` | `ln(1 + access_count) / ln(101)` |
//! | 4 | `pinned` | 0/1 |
//! | 5 | `has_embedding` | 0/1 (path indicator, lets the gate calibrate the two encoders) |
//! | 6 | `superseded` | 0/1 |
//! | 7 | `bm25_hit` | 1 if `bm25_score` is `Some` |
//! | 8 | `bm25_norm` | `max(bm25, 0) / max over the list` (0 when no hit or the max is ≤ 0) |
//! | 9 | `bm25_rank` | `1 / log2(1 + bm25_rank)` (0 when `None`) |
//! | 10 | `effective_score` | clamped to `[0, 1]` |
//! | 11 | `effective_rel` | `effective_score / max over the list` (0 when the max is ≤ 0) |
//! | 12 | `project_match` | 0/1 |
//! | 13 | `tag_overlap` | clamped to `[0, 1]` |
//! | 14 | `log_injected` | `ln(1 + times_injected) / ln(101)` |
//! | 15 | `log_useful` | `ln(1 + max(times_useful, 0)) / ln(101)` |
//! | 16 | `useful_rate` | `max(times_useful, 0) / (times_injected + 1)`, clamped to `[0, 1]` |
//! | 17 | `lexical_overlap` | clamped to `[0, 1]` |
//! | 18 | `neighbor_score` | clamped to `[0, 1]` |
//! | 19 | `session_match` | clamped to `[0, 1]` |
//! | 20 | `log_terms` | `ln(1 + content_terms) / ln(101)` |
//! | 21 | `follows_hit` | clamped to `[0, 1]` |
//! | 22 | `precedes_hit` | clamped to `[0, 1]` |
//! | 23 | `time_match` | clamped to `[0, 1]` |
//! | 24 | `context_before` | `max(x, 0) / max over the list` (0 when the max is ≤ 0) |
//! | 25 | `context_after` | the same |
//! | 26 | `context_wide` | the same |
//! | 27 | `is_question` | clamped to `[0, 1]` |
//! | 28 | `follows_question` | `max(x, 0) / max over the list` (0 when the max is ≤ 0) |
//! | 29 | `quantity_match` | clamped to `[0, 1]` |
//! | 30 | `proper_nouns` | `ln(1 + proper_nouns) / ln(11)`, at most 1 |
//! | 31 | `states_number` | clamped to `[0, 1]` |
//! | 32 | `states_time` | clamped to `[0, 1]` |
//! | 33 | `first_person` | clamped to `[0, 1]` |
//! | 34 | `date_match` | clamped to `[0, 1]` |
//! | 35 | `graph_score` | clamped to `[0, 1]` |
//! | 36 | `tag_affinity` | clamped to `[-1, 1]` (0: neutral or unknown) |
//! | 37 | `tag_relevance` | clamped to `[-1, 1]` |
//! | 38 | `stack_match` | 0/1 |
//!
//! Features are only ever appended: a checkpoint written with fewer features
//! loads with zero weights on the new ones (see [`crate::checkpoint::decode`]).
//!
//! # Session features
//!
//! [`encode_session`] turns [`SessionSignals`] into a `NUM_SESSION_FEATURES`
//! vector and an optional project slot. These values are the same for every
//! candidate of a list; the model therefore never adds them to a logit
//! directly (a softmax would cancel them) but lets them modulate
//! per-candidate terms (see [`crate::model`]).
//!
//! | # | name | transform |
//! |---|---|---|
//! | 0, 1 | `hour_sin`, `hour_cos` | `sin/cos(2π·hour/24)` |
//! | 2, 3 | `weekday_sin`, `weekday_cos` | `sin/cos(2π·weekday/7)` (Mon = 0) |
//! | 4 | `weekend` | 1 on Saturday and Sunday (the weekly pattern a circle encodes worst) |
//! | 5, 6 | `month_sin`, `month_cos` | `sin/cos(2π·month0/12)` |
//! | 7 | `log_gap` | `ln(1 + gap_hours) / ln(1 + 720)` (≈ 1 at 30 days; 0 when unknown) |
//! | 8 | `gap_known` | 1 if `gap_hours` is `Some` |
//! | 9 | `project_known` | 1 if `project` is a non-empty string |
//!
//! The project slot is `fnv1a64(project) % project_slots` (the project string
//! as given, case-sensitive); an empty or absent project has no slot.

use nalgebra::{DMatrix, DVector};
use std::f32::consts::TAU;

use crate::error::{Error, check_finite};
use crate::tokenizer::fnv1a64;

/// Number of encoded per-candidate features.
pub const NUM_FEATURES: usize = 39;

/// Names of the encoded per-candidate features, in matrix row order.
pub const FEATURE_NAMES: [&str; NUM_FEATURES] = [
    "log_age",
    "recency_rank",
    "importance",
    "log_access",
    "pinned",
    "has_embedding",
    "superseded",
    "bm25_hit",
    "bm25_norm",
    "bm25_rank",
    "effective_score",
    "effective_rel",
    "project_match",
    "tag_overlap",
    "log_injected",
    "log_useful",
    "useful_rate",
    "lexical_overlap",
    "neighbor_score",
    "session_match",
    "log_terms",
    "follows_hit",
    "precedes_hit",
    "time_match",
    "context_before",
    "context_after",
    "context_wide",
    "is_question",
    "follows_question",
    "quantity_match",
    "proper_nouns",
    "states_number",
    "states_time",
    "first_person",
    "date_match",
    "graph_score",
    "tag_affinity",
    "tag_relevance",
    "stack_match",
];

/// Row index of a named feature, for callers and tests that need one.
pub fn feature_index(name: &str) -> Option<usize> {
    FEATURE_NAMES.iter().position(|&n| n == name)
}

/// Number of encoded session features.
pub const NUM_SESSION_FEATURES: usize = 10;

/// Names of the encoded session features, in vector order.
pub const SESSION_FEATURE_NAMES: [&str; NUM_SESSION_FEATURES] = [
    "hour_sin",
    "hour_cos",
    "weekday_sin",
    "weekday_cos",
    "weekend",
    "month_sin",
    "month_cos",
    "log_gap",
    "gap_known",
    "project_known",
];

/// Raw signals of one candidate memory, as the caller knows them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CandidateSignals {
    /// Age of the memory in days at query time (≥ 0, fractional).
    pub age_days: f32,
    /// Stored importance, nominally in `[0, 1]`.
    pub importance: f32,
    /// How many times the memory was accessed.
    pub access_count: u32,
    /// Pinned by the user.
    pub pinned: bool,
    /// The memory has a stored embedding (the pre-embedded path is available).
    pub has_embedding: bool,
    /// The memory was superseded or deprecated.
    pub superseded: bool,
    /// Raw FTS5 BM25 score with the sign flipped so that higher is better; `None` = not a BM25 hit.
    pub bm25_score: Option<f32>,
    /// 1-based rank among the BM25 hits; `None` = not a hit.
    pub bm25_rank: Option<u32>,
    /// The baseline's effective score (see [`crate::baseline::effective_score`]).
    pub effective_score: f32,
    /// The memory belongs to the session's project.
    pub project_match: bool,
    /// Share of the memory's tags that match the session's tags, in `[0, 1]`.
    pub tag_overlap: f32,
    /// How many times the memory was injected before.
    pub times_injected: u32,
    /// How useful it was when injected, e.g. the sum of its positive labels.
    pub times_useful: f32,
    /// IDF-weighted share of the query's terms present in the memory, in `[0, 1]`.
    pub lexical_overlap: f32,
    /// Best normalised BM25 among the memory's neighbours in its source session, in `[0, 1]`.
    pub neighbor_score: f32,
    /// Best normalised BM25 among the *other* memories of its source session
    /// (the session discussed the query's topic), in `[0, 1]`.
    pub session_match: f32,
    /// Distinct content terms of the memory (how much it says).
    pub content_terms: u32,
    /// Normalised BM25 of the memory just before it in its source session,
    /// divided by the distance (it may answer or continue that hit), in `[0, 1]`.
    pub follows_hit: f32,
    /// Normalised BM25 of the memory just after it in its source session,
    /// divided by the distance (it may be what that hit answers), in `[0, 1]`.
    pub precedes_hit: f32,
    /// The query asks about time (when, how long, which year…) and the memory
    /// states one (a date, a weekday, "yesterday", "two weeks ago"…), in `[0, 1]`.
    pub time_match: f32,
    /// BM25 of the memory read together with the one just before it in its
    /// source session (an answer scored with its question), ≥ 0.
    pub context_before: f32,
    /// BM25 of the memory read together with the one just after it, ≥ 0.
    pub context_after: f32,
    /// BM25 of the window from two before to one after the memory, ≥ 0.
    pub context_wide: f32,
    /// The memory is a question (1) or not (0): a question shares the words
    /// of what is asked about but rarely holds the answer.
    pub is_question: f32,
    /// BM25 of the memory just before it in its source session when that
    /// memory is a question (this one is likely its answer), else 0; ≥ 0.
    pub follows_question: f32,
    /// The query asks for a quantity (how many, how much, how old…) and the
    /// memory states a number, in `[0, 1]`.
    pub quantity_match: f32,
    /// Capitalised words inside its sentences (names, places, titles): a
    /// memory that names things states a fact more often than small talk does.
    pub proper_nouns: u32,
    /// The memory states a number (a numeral or a number word), in `[0, 1]`.
    pub states_number: f32,
    /// The memory states a time (a date, a weekday, "yesterday", "last week"…), in `[0, 1]`.
    pub states_time: f32,
    /// The memory speaks in the first person ("I", "my", "we"…): the speaker
    /// reports on their own life or work, in `[0, 1]`.
    pub first_person: f32,
    /// The query names a date (a day, a month, a year) and the memory was
    /// created then, in `[0, 1]` (see `shared::base::text::date_fit`).
    pub date_match: f32,
    /// Best normalised BM25 of a strong hit the memory is linked to in the
    /// knowledge graph, times the edge's strength, in `[0, 1]` (0 when unlinked).
    pub graph_score: f32,
    /// How the memory's tags fit the session's environment: the tag affinity
    /// multiplier minus one, in `[-0.7, 0.7]` (0 when either has no tags; see
    /// `shared::domain::env::rank`).
    pub tag_affinity: f32,
    /// The memory's tag relevance in the session's environment: the average
    /// EMA score over its tags divided by 3, in `[-1, 1]` (0 without evidence).
    pub tag_relevance: f32,
    /// The memory was learned in two or more projects and the session's
    /// environment has every tag those shared.
    pub stack_match: bool,
}

/// Signals of the session a list is ranked for; equal for every candidate of the list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSignals {
    /// Local hour of day, fractional, in `[0, 24)`.
    pub hour: f32,
    /// Day of week, Monday = 0 … Sunday = 6.
    pub weekday: u8,
    /// Month, January = 0 … December = 11.
    pub month0: u8,
    /// Hours since the previous session (of the same project), if known; ≥ 0.
    pub gap_hours: Option<f32>,
    /// The session's project, if any.
    pub project: Option<String>,
}

/// Encoded session: the dense feature vector and the project's embedding slot.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedSession {
    /// `NUM_SESSION_FEATURES` values.
    pub features: DVector<f32>,
    /// Row of the project table, or `None` without a project.
    pub project_slot: Option<u32>,
}

fn log_ratio(x: f32, scale: f32) -> f32 {
    (1.0 + x.max(0.0)).ln() / (1.0 + scale).ln()
}

fn inv_log_rank(rank: u32) -> f32 {
    1.0 / (1.0 + rank as f32).log2()
}

fn check_signals(i: usize, s: &CandidateSignals) -> Result<(), Error> {
    let name = |field: &'static str| move || format!("candidate {i} signal {field}");
    check_finite(name("age_days"), s.age_days)?;
    check_finite(name("importance"), s.importance)?;
    check_finite(name("effective_score"), s.effective_score)?;
    check_finite(name("tag_overlap"), s.tag_overlap)?;
    check_finite(name("times_useful"), s.times_useful)?;
    check_finite(name("lexical_overlap"), s.lexical_overlap)?;
    check_finite(name("neighbor_score"), s.neighbor_score)?;
    check_finite(name("session_match"), s.session_match)?;
    check_finite(name("follows_hit"), s.follows_hit)?;
    check_finite(name("precedes_hit"), s.precedes_hit)?;
    check_finite(name("time_match"), s.time_match)?;
    check_finite(name("context_before"), s.context_before)?;
    check_finite(name("context_after"), s.context_after)?;
    check_finite(name("context_wide"), s.context_wide)?;
    check_finite(name("is_question"), s.is_question)?;
    check_finite(name("follows_question"), s.follows_question)?;
    check_finite(name("quantity_match"), s.quantity_match)?;
    check_finite(name("states_number"), s.states_number)?;
    check_finite(name("states_time"), s.states_time)?;
    check_finite(name("first_person"), s.first_person)?;
    check_finite(name("date_match"), s.date_match)?;
    check_finite(name("graph_score"), s.graph_score)?;
    check_finite(name("tag_affinity"), s.tag_affinity)?;
    check_finite(name("tag_relevance"), s.tag_relevance)?;
    if let Some(b) = s.bm25_score {
        check_finite(name("bm25_score"), b)?;
    }
    if s.age_days < 0.0 {
        return Err(Error::OutOfRange { input: name("age_days")(), why: format!("must be >= 0, got {}", s.age_days) });
    }
    if s.bm25_rank == Some(0) {
        return Err(Error::OutOfRange { input: name("bm25_rank")(), why: "ranks are 1-based, got 0".into() });
    }
    Ok(())
}

/// Encodes a list of candidates into a `NUM_FEATURES × n` matrix (see the module table).
///
/// Rejects NaN/Inf values, negative ages and a BM25 rank of 0, naming the candidate and field.
pub fn encode_candidates(signals: &[CandidateSignals]) -> Result<DMatrix<f32>, Error> {
    for (i, s) in signals.iter().enumerate() {
        check_signals(i, s)?;
    }
    let n = signals.len();
    let bm25_max = signals.iter().filter_map(|s| s.bm25_score).fold(0.0f32, f32::max);
    let eff_max = signals.iter().map(|s| s.effective_score).fold(0.0f32, f32::max);
    let list_max = |f: fn(&CandidateSignals) -> f32| signals.iter().map(f).fold(0.0f32, f32::max);
    let (before_max, after_max, wide_max) =
        (list_max(|s| s.context_before), list_max(|s| s.context_after), list_max(|s| s.context_wide));
    let answers_max = list_max(|s| s.follows_question);
    let relative = |x: f32, max: f32| if max > 0.0 { x.max(0.0) / max } else { 0.0 };
    // Recency rank: ascending age, ties by index (stable sort).
    let mut by_age: Vec<usize> = (0..n).collect();
    by_age.sort_by(|&a, &b| signals[a].age_days.total_cmp(&signals[b].age_days));
    let mut recency_rank = vec![0u32; n];
    for (r, &i) in by_age.iter().enumerate() {
        recency_rank[i] = u32::try_from(r + 1).unwrap_or(u32::MAX);
    }
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let mut m = DMatrix::zeros(NUM_FEATURES, n);
    for (j, s) in signals.iter().enumerate() {
        let useful = s.times_useful.max(0.0);
        let col = [
            log_ratio(s.age_days, 365.0),
            inv_log_rank(recency_rank[j]),
            s.importance.clamp(0.0, 1.0),
            log_ratio(s.access_count as f32, 100.0),
            flag(s.pinned),
            flag(s.has_embedding),
            flag(s.superseded),
            flag(s.bm25_score.is_some()),
            match s.bm25_score {
                Some(b) if bm25_max > 0.0 => b.max(0.0) / bm25_max,
                _ => 0.0,
            },
            s.bm25_rank.map_or(0.0, inv_log_rank),
            s.effective_score.clamp(0.0, 1.0),
            if eff_max > 0.0 { s.effective_score.max(0.0) / eff_max } else { 0.0 },
            flag(s.project_match),
            s.tag_overlap.clamp(0.0, 1.0),
            log_ratio(s.times_injected as f32, 100.0),
            log_ratio(useful, 100.0),
            (useful / (s.times_injected as f32 + 1.0)).clamp(0.0, 1.0),
            s.lexical_overlap.clamp(0.0, 1.0),
            s.neighbor_score.clamp(0.0, 1.0),
            s.session_match.clamp(0.0, 1.0),
            log_ratio(s.content_terms as f32, 100.0),
            s.follows_hit.clamp(0.0, 1.0),
            s.precedes_hit.clamp(0.0, 1.0),
            s.time_match.clamp(0.0, 1.0),
            relative(s.context_before, before_max),
            relative(s.context_after, after_max),
            relative(s.context_wide, wide_max),
            s.is_question.clamp(0.0, 1.0),
            relative(s.follows_question, answers_max),
            s.quantity_match.clamp(0.0, 1.0),
            log_ratio(s.proper_nouns as f32, 10.0).min(1.0),
            s.states_number.clamp(0.0, 1.0),
            s.states_time.clamp(0.0, 1.0),
            s.first_person.clamp(0.0, 1.0),
            s.date_match.clamp(0.0, 1.0),
            s.graph_score.clamp(0.0, 1.0),
            s.tag_affinity.clamp(-1.0, 1.0),
            s.tag_relevance.clamp(-1.0, 1.0),
            flag(s.stack_match),
        ];
        m.column_mut(j).copy_from_slice(&col);
    }
    Ok(m)
}

/// The project's slot in a table of `project_slots` rows: `fnv1a64(project) % project_slots`.
///
/// `None` for an absent or empty project, or when `project_slots` is 0.
pub fn project_slot(project: Option<&str>, project_slots: u32) -> Option<u32> {
    match project {
        Some(p) if !p.is_empty() && project_slots > 0 => {
            Some(u32::try_from(fnv1a64(p.as_bytes()) % u64::from(project_slots)).expect("remainder fits in u32"))
        }
        _ => None,
    }
}

/// Encodes the session signals (see the module table).
///
/// Rejects a NaN/Inf or out-of-range hour (`[0, 24)`), weekday (`0..7`), month (`0..12`) or gap (≥ 0).
pub fn encode_session(s: &SessionSignals, project_slots: u32) -> Result<EncodedSession, Error> {
    check_finite(|| "session hour".into(), s.hour)?;
    if !(0.0..24.0).contains(&s.hour) {
        return Err(Error::OutOfRange {
            input: "session hour".into(),
            why: format!("must be in [0, 24), got {}", s.hour),
        });
    }
    if s.weekday >= 7 {
        return Err(Error::OutOfRange {
            input: "session weekday".into(),
            why: format!("must be 0 (Monday) ..= 6, got {}", s.weekday),
        });
    }
    if s.month0 >= 12 {
        return Err(Error::OutOfRange {
            input: "session month0".into(),
            why: format!("must be 0 (January) ..= 11, got {}", s.month0),
        });
    }
    if let Some(g) = s.gap_hours {
        check_finite(|| "session gap_hours".into(), g)?;
        if g < 0.0 {
            return Err(Error::OutOfRange { input: "session gap_hours".into(), why: format!("must be >= 0, got {g}") });
        }
    }
    let slot = project_slot(s.project.as_deref(), project_slots);
    let h = TAU * s.hour / 24.0;
    let w = TAU * f32::from(s.weekday) / 7.0;
    let mo = TAU * f32::from(s.month0) / 12.0;
    let features = DVector::from_column_slice(&[
        h.sin(),
        h.cos(),
        w.sin(),
        w.cos(),
        if s.weekday >= 5 { 1.0 } else { 0.0 },
        mo.sin(),
        mo.cos(),
        s.gap_hours.map_or(0.0, |g| log_ratio(g, 720.0)),
        if s.gap_hours.is_some() { 1.0 } else { 0.0 },
        if slot.is_some() { 1.0 } else { 0.0 },
    ]);
    Ok(EncodedSession { features, project_slot: slot })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feat(m: &DMatrix<f32>, name: &str, j: usize) -> f32 {
        m[(feature_index(name).expect("known feature"), j)]
    }

    #[test]
    fn list_relative_features() {
        let s = [
            CandidateSignals {
                bm25_score: Some(4.0),
                bm25_rank: Some(2),
                effective_score: 0.5,
                age_days: 10.0,
                ..Default::default()
            },
            CandidateSignals {
                bm25_score: Some(8.0),
                bm25_rank: Some(1),
                effective_score: 0.25,
                age_days: 1.0,
                ..Default::default()
            },
            CandidateSignals { age_days: 10.0, ..Default::default() },
        ];
        let m = encode_candidates(&s).expect("valid");
        assert_eq!(m.shape(), (NUM_FEATURES, 3));
        assert_eq!(feat(&m, "bm25_norm", 0), 0.5);
        assert_eq!(feat(&m, "bm25_norm", 1), 1.0);
        assert_eq!(feat(&m, "bm25_norm", 2), 0.0);
        assert_eq!(feat(&m, "bm25_hit", 2), 0.0);
        assert_eq!(feat(&m, "bm25_rank", 1), 1.0);
        assert!((feat(&m, "bm25_rank", 0) - 1.0 / 3f32.log2()).abs() < 1e-6);
        assert_eq!(feat(&m, "effective_rel", 0), 1.0);
        assert_eq!(feat(&m, "effective_rel", 1), 0.5);
        // Recency: candidate 1 is newest; the tie between 0 and 2 is broken by index.
        assert_eq!(feat(&m, "recency_rank", 1), 1.0);
        assert!(feat(&m, "recency_rank", 0) > feat(&m, "recency_rank", 2));
    }

    #[test]
    fn non_finite_and_out_of_range_inputs_are_named() {
        let bad = [CandidateSignals::default(), CandidateSignals { importance: f32::NAN, ..Default::default() }];
        let e = encode_candidates(&bad).expect_err("NaN").to_string();
        assert!(e.contains("candidate 1 signal importance"), "{e}");
        let e = encode_candidates(&[CandidateSignals { bm25_rank: Some(0), ..Default::default() }])
            .expect_err("rank 0")
            .to_string();
        assert!(e.contains("bm25_rank"), "{e}");
        let e = encode_session(&SessionSignals { hour: 24.0, ..Default::default() }, 32).expect_err("hour").to_string();
        assert!(e.contains("session hour"), "{e}");
        let e = encode_session(&SessionSignals { gap_hours: Some(f32::INFINITY), ..Default::default() }, 32)
            .expect_err("gap")
            .to_string();
        assert!(e.contains("gap_hours"), "{e}");
        assert!(encode_session(&SessionSignals { weekday: 7, ..Default::default() }, 32).is_err());
    }

    #[test]
    fn session_encoding() {
        let s =
            SessionSignals { hour: 6.0, weekday: 0, month0: 3, gap_hours: Some(720.0), project: Some("engram".into()) };
        let e = encode_session(&s, 32).expect("valid");
        assert!((e.features[0] - 1.0).abs() < 1e-6); // sin(π/2)
        assert_eq!(e.features[4], 0.0); // Monday is not weekend
        assert!((e.features[5] - 1.0).abs() < 1e-6); // sin(2π·3/12)
        assert!((e.features[7] - 1.0).abs() < 1e-6);
        assert_eq!(e.features[8], 1.0);
        assert_eq!(e.features[9], 1.0);
        assert_eq!(e.project_slot, Some((fnv1a64(b"engram") % 32) as u32));
        assert_eq!(project_slot(Some(""), 32), None);
        assert_eq!(project_slot(None, 32), None);
    }
}
