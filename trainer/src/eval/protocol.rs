//! The LoCoMo evaluation: one fresh store per conversation, one ranked list
//! per question through the serving pipeline, and the two protocols (across
//! users, per user) that train and test the predictor on those lists.
//!
//! # Lists
//!
//! Every turn (and, with `--observations`, every observation) becomes a
//! memory through the tape log of a temporary data home, created at its
//! session's date with its speaker. Each retrieval question is then a query
//! a day after the last session: BM25 alone is [`rank::pool::bm25_search`];
//! the other rankings reorder the pool [`rank::pool::gather`] builds with the
//! serving limits, exactly as a hook's ranking does before diversity and the
//! injection budget (which change what is shown, not the order measured).
//! Metrics are at turn level: an observation stands for its source turn, and
//! a turn counts once, at its best position.
//!
//! # History: what a user's earlier questions teach
//!
//! A question asked and answered earlier leaves history in the store: its
//! injected memories count `times_injected`, the memories its session used
//! count `times_useful`. The evaluation models an answered question as a
//! served ranking whose baseline top 10 were injected and whose evidence in
//! the pool was labelled useful, and sets those two signals of a list's
//! candidates from the questions designated as its past. Only those: every
//! other signal is the pipeline's own. A list never sees its own labels: its
//! past excludes itself ([`History::without`]).
//!
//! # Protocols
//!
//! * **Across users**: for each conversation, a model is trained from scratch
//!   as a generic base ([`crate::training::generic_base`]: the user-specific
//!   value projection left at zero) on the other conversations' lists (one in
//!   ten held out for early stopping
//!   and for α) and tested on every list of the held-out conversation, which
//!   has no history (a new user). In each training conversation half of the
//!   questions carry the history of the other half, so the model learns what
//!   history is worth without depending on it.
//! * **Per user**: the across-users model of the conversation is the base
//!   (seed 002, "Pre-Trained Model Path"). For each seed, the conversation's
//!   questions are split in random halves; the first half is the user's past:
//!   its lists carry the history of the rest of the half and fine-tune the base
//!   as the trainer continues a model; the second half is tested with the
//!   history of the whole first half.
//!
//! α is the one the predictor earned on its validation lists: the share of
//! lists where its NDCG@10 beats the baseline's (ties count half) is the
//! success rate, and α follows [`alpha_for`] for a model past cold start.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

use predictor::fusion::{order_by_score, ranks_from_scores, rrf};
use predictor::model::{Model, ModelConfig, OwnedCandidate, OwnedQuery};
use predictor::train::{AdamState, Sample};
use serde::Serialize;
use shared::base::config::Config;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::rank::state::{COLD_START_SUCCESS, alpha_for};
use shared::domain::rank::{self, PoolLimits, PoolQuery};
use shared::storage::event::{Body, Event, MemoryAdded};

use super::locomo::{Conversation, Dataset, Notes, category_name};
use super::metrics::{RANKINGS, Table, TableMeans, query_metrics};
use crate::error::{Error, Result};
use crate::training::{generic_base, train_config};

/// Writer name of the evaluation's events.
const WRITER: &str = "engram-trainer-eval";
/// BM25 hits ranked for the BM25-alone ranking.
const BM25_DEPTH: usize = 100;
/// Memories a served ranking injects, for the history model.
const HISTORY_INJECTED: usize = 10;
/// One list in this many of the training conversations is kept for validation.
const VALID_EVERY: usize = 10;
/// One list in this many of a user's past is kept for validation when fine-tuning.
const PER_USER_VALID_EVERY: usize = 5;

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Add LoCoMo's observations as memories too.
    pub observations: bool,
    /// Seeds of the per-user protocol (at least 1).
    pub seeds: u32,
    /// Test only these conversations (sample ids; all if empty); every conversation still trains the others.
    pub conversations: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { observations: false, seeds: 3, conversations: Vec::new() }
    }
}

/// One question's ranked list, ready for both rankers.
#[derive(Clone, Debug)]
pub struct EvalList {
    /// Index of the conversation in the evaluated set.
    pub conv: usize,
    /// The question's index among its conversation's questions.
    pub question: usize,
    /// Its category.
    pub category: u8,
    /// Evidence turn ids.
    pub relevant: BTreeSet<String>,
    /// Turn ids in BM25 order.
    pub bm25: Vec<String>,
    /// Pool memories, in pool order.
    pub ids: Vec<MemoryId>,
    /// Each pool memory's turn.
    pub turns: Vec<String>,
    /// Baseline scores of the pool.
    pub baseline: Vec<f32>,
    /// The predictor's input (without history) and the labels.
    pub sample: Sample,
}

impl EvalList {
    fn ranked_turns(&self, scores: &[f32]) -> Vec<&str> {
        order_by_score(scores).into_iter().map(|i| self.turns[i].as_str()).collect()
    }
}

/// Pool statistics.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PoolStats {
    /// Mean pool size.
    pub mean_size: f64,
    /// Share of evidence turns in the pool, averaged over questions.
    pub recall: f64,
    /// The same per category.
    pub recall_by_category: std::collections::BTreeMap<String, f64>,
}

/// One fold of the across-users protocol.
#[derive(Clone, Debug, Serialize)]
pub struct Fold {
    /// The held-out conversation.
    pub conversation: String,
    /// Training, validation and test lists.
    pub train_lists: usize,
    /// Validation lists.
    pub valid_lists: usize,
    /// Test lists.
    pub test_lists: usize,
    /// Epochs run and the one kept.
    pub epochs: usize,
    /// The epoch whose weights were kept.
    pub best_epoch: Option<usize>,
    /// α earned on validation.
    pub alpha: f32,
    /// Mean α of the per-user fine-tunes.
    pub per_user_alpha: f32,
}

/// A protocol's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProtocolReport {
    /// Metrics per ranking, overall and per category.
    #[serde(flatten)]
    pub table: TableMeans,
    /// Mean α of the fused ranking.
    pub alpha: f64,
}

/// The whole evaluation's results.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The dataset file.
    pub dataset: String,
    /// Conversations tested.
    pub conversations: Vec<String>,
    /// Retrieval questions (categories 1–4 with evidence).
    pub questions: usize,
    /// Memories per conversation came from observations too.
    pub observations: bool,
    /// Per-user seeds.
    pub seeds: u32,
    /// Dataset repairs.
    pub notes: Notes,
    /// Candidate pool.
    pub pool: PoolStats,
    /// Across users (leave one conversation out).
    pub across_users: ProtocolReport,
    /// Per user (fine-tuned on half of a user's questions).
    pub per_user: ProtocolReport,
    /// Folds.
    pub folds: Vec<Fold>,
    /// Seconds for lists and pools.
    pub seconds_lists: f64,
    /// Seconds in all.
    pub seconds: f64,
}

/// Progress callback: a stage name, work done, work in all.
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// Runs the evaluation of `dataset` (read from `path`).
pub fn run(path: &Path, dataset: &Dataset, config: &Config, opts: &Options, progress: Progress<'_>) -> Result<Report> {
    let started = Instant::now();
    let convs: Vec<&Conversation> = dataset.conversations.iter().collect();
    if let Some(missing) = opts.conversations.iter().find(|id| !convs.iter().any(|c| &c.id == *id)) {
        return Err(Error::InvalidInput(format!("no conversation {missing} in the dataset")));
    }
    let tested: Vec<usize> = (0..convs.len())
        .filter(|&i| opts.conversations.is_empty() || opts.conversations.contains(&convs[i].id))
        .collect();
    if tested.is_empty() {
        return Err(Error::InvalidInput("the dataset has no conversation".into()));
    }
    let model_config = ModelConfig { native_dim: 0, ..ModelConfig::default() };
    let mut lists: Vec<EvalList> = Vec::new();
    for (ci, conv) in convs.iter().enumerate() {
        progress("building stores and pools", ci as u64, convs.len() as u64);
        lists.extend(conversation_lists(conv, ci, config, &model_config, opts.observations)?);
    }
    let seconds_lists = started.elapsed().as_secs_f64();
    let tested_lists: Vec<EvalList> = lists.iter().filter(|l| tested.contains(&l.conv)).cloned().collect();
    let pool = pool_stats(&tested_lists);

    let mut across = Table::default();
    let mut per_user = Table::default();
    let mut folds = Vec::new();
    let (mut across_alpha, mut user_alpha, mut user_runs) = (0.0f64, 0.0f64, 0u32);
    let n_folds = tested.len();
    for (done, &fold) in tested.iter().enumerate() {
        let conv = convs[fold];
        progress("training and testing", done as u64, n_folds as u64);
        let test: Vec<&EvalList> = lists.iter().filter(|l| l.conv == fold).collect();
        let (base, fold_report) = if convs.len() > 1 {
            let (train, valid) = across_users_training(&lists, fold);
            let train: Vec<Sample> = train.into_iter().map(|(_, s)| s).collect();
            let valid_samples: Vec<Sample> = valid.iter().map(|(_, s)| s.clone()).collect();
            let model = train_model(None, &train, &valid_samples, &model_config, fold as u64 + 1)?;
            let alpha = earned_alpha(&model.0, &valid)?;
            for l in &test {
                add_rankings(&mut across, l, &l.sample, Some((&model.0, alpha)), config)?;
            }
            let f = Fold {
                conversation: conv.id.clone(),
                train_lists: train.len(),
                valid_lists: valid.len(),
                test_lists: test.len(),
                epochs: model.1.epochs.len(),
                best_epoch: model.1.best_epoch,
                alpha,
                per_user_alpha: 0.0,
            };
            across_alpha += f64::from(alpha);
            (Some(model.0), f)
        } else {
            // One conversation: nothing to train across users on; per user starts fresh.
            for l in &test {
                add_rankings(&mut across, l, &l.sample, None, config)?;
            }
            let f = Fold {
                conversation: conv.id.clone(),
                train_lists: 0,
                valid_lists: 0,
                test_lists: test.len(),
                epochs: 0,
                best_epoch: None,
                alpha: 1.0,
                per_user_alpha: 0.0,
            };
            across_alpha += 1.0;
            (None, f)
        };
        let mut fold_report = fold_report;
        let mut fold_alpha = 0.0f32;
        for seed in 0..opts.seeds.max(1) {
            let (past, future) = user_halves(&test, seed);
            let history = History::of(&past);
            let (fit, valid) = split_every(&past, PER_USER_VALID_EVERY);
            let fit: Vec<Sample> = fit.iter().map(|l| history.without(l).patch(l)).collect();
            let valid_pairs: Vec<Patched<'_>> = valid.iter().map(|l| (*l, history.without(l).patch(l))).collect();
            let valid_lists: Vec<Sample> = valid_pairs.iter().map(|(_, s)| s.clone()).collect();
            let (model, _) =
                train_model(base.as_ref(), &fit, &valid_lists, &model_config, 1000 + u64::from(seed) + fold as u64)?;
            let alpha = earned_alpha(&model, &valid_pairs)?;
            fold_alpha += alpha;
            user_alpha += f64::from(alpha);
            user_runs += 1;
            for l in &future {
                let sample = history.patch(l);
                add_rankings(&mut per_user, l, &sample, Some((&model, alpha)), config)?;
            }
        }
        fold_report.per_user_alpha = fold_alpha / opts.seeds.max(1) as f32;
        folds.push(fold_report);
    }
    progress("done", n_folds as u64, n_folds as u64);
    Ok(Report {
        dataset: path.display().to_string(),
        conversations: tested.iter().map(|&i| convs[i].id.clone()).collect(),
        questions: tested_lists.len(),
        observations: opts.observations,
        seeds: opts.seeds.max(1),
        notes: dataset.notes.clone(),
        pool,
        across_users: ProtocolReport { table: across.means(), alpha: across_alpha / n_folds as f64 },
        per_user: ProtocolReport { table: per_user.means(), alpha: user_alpha / f64::from(user_runs.max(1)) },
        folds,
        seconds_lists,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn memory_id(conv: &str, key: &str) -> MemoryId {
    MemoryId(format!("locomo-{conv}-{key}"))
}

/// Loads one conversation into a fresh store and builds the list of every retrieval question.
pub fn conversation_lists(
    conv: &Conversation,
    ci: usize,
    config: &Config,
    model_config: &ModelConfig,
    observations: bool,
) -> Result<Vec<EvalList>> {
    let dir = tempfile::tempdir().map_err(|e| Error::io("create a temporary data home", Path::new("/tmp"), e))?;
    let mut journal = shared::projection::open(&Paths::at(dir.path()), WRITER)?;
    let mut events = Vec::new();
    let mut turn_of: HashMap<MemoryId, String> = HashMap::new();
    let mut add = |ts: Ts, session: &SessionKey, key: String, turn: &str, speaker: &str, content: String| {
        let id = memory_id(&conv.id, &key);
        turn_of.insert(id.clone(), turn.to_owned());
        events.push(Event::new(
            ts,
            WRITER,
            Some(session.clone()),
            Body::MemoryAdded(MemoryAdded {
                memory_id: id,
                content,
                memory_type: shared::storage::event::MemoryType::Fact,
                importance: 0.5,
                tags: vec![speaker.to_lowercase()],
                source: "import".into(),
                source_session: Some(session.clone()),
                speaker: Some(speaker.to_owned()),
                ..Default::default()
            }),
        ));
    };
    for s in &conv.sessions {
        let session = SessionKey::new("engram", &format!("locomo/{}/session_{}", conv.id, s.index));
        for (i, t) in s.turns.iter().enumerate() {
            let ts = s.date.plus_millis(i as i64 * 1000);
            add(ts, &session, t.dia_id.clone(), &t.dia_id, &t.speaker, format!("{}: {}", t.speaker, t.text));
        }
        if observations {
            let base = s.date.plus_millis(s.turns.len() as i64 * 1000);
            for (i, o) in conv.observations.iter().filter(|o| o.session == s.index).enumerate() {
                let ts = base.plus_millis(i as i64 * 1000);
                add(ts, &session, format!("obs{}-{i}", s.index), &o.dia_id, &o.speaker, o.text.clone());
            }
        }
    }
    journal.append(&events)?;
    // The discovery engine's edges, as a product import would get them
    // (the graph is a candidate source of the ranking).
    let ids: Vec<MemoryId> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m) => Some(m.memory_id.clone()),
            _ => None,
        })
        .collect();
    let last = events.last().map_or(Ts(0), |e| e.ts);
    shared::domain::knowledge::discovery::link(&mut journal, config, &ids, last)?;
    let store = journal.store();
    let now = conv.query_time();
    let tz = jiff::tz::TimeZone::UTC;
    let session = rank::session_signals(store, None, None, now, &tz)?;
    let limits = PoolLimits::of(config);
    let turn = |id: &MemoryId| turn_of.get(id).cloned().unwrap_or_default();
    let mut lists = Vec::new();
    for q in conv.retrieval_questions() {
        let bm25: Vec<String> =
            rank::pool::bm25_search(store, &q.text, BM25_DEPTH)?.into_iter().map(|(id, _)| turn(&id)).collect();
        let pool = rank::pool::gather(
            store,
            &PoolQuery { text: &q.text, embedding: None, project: None, session: None, now },
            &limits,
        )?;
        let baseline = rank::baseline_scores(&pool);
        let ids: Vec<MemoryId> = pool.memories.iter().map(|m| m.id.clone()).collect();
        let turns: Vec<String> = ids.iter().map(turn).collect();
        let labels: Vec<f32> = turns.iter().map(|t| f32::from(u8::from(q.evidence.contains(t)))).collect();
        let buckets = model_config.hash_buckets;
        let sample = Sample {
            query: OwnedQuery {
                tokens: predictor::tokenizer::token_ids(&q.text, buckets),
                embedding: None,
                session: session.clone(),
            },
            candidates: pool
                .memories
                .iter()
                .map(|m| OwnedCandidate {
                    tokens: predictor::tokenizer::token_ids(&m.content, buckets),
                    embedding: None,
                    signals: m.signals,
                })
                .collect(),
            labels,
            weight: 1.0,
        };
        lists.push(EvalList {
            conv: ci,
            question: q.index,
            category: q.category,
            relevant: q.evidence.clone(),
            bm25,
            ids,
            turns,
            baseline,
            sample,
        });
    }
    Ok(lists)
}

fn pool_stats(lists: &[EvalList]) -> PoolStats {
    let mut by_cat: std::collections::BTreeMap<u8, (f64, f64)> = std::collections::BTreeMap::new();
    let (mut size, mut recall) = (0.0, 0.0);
    for l in lists {
        let in_pool: BTreeSet<&str> = l.turns.iter().map(String::as_str).collect();
        let r = l.relevant.iter().filter(|t| in_pool.contains(t.as_str())).count() as f64 / l.relevant.len() as f64;
        size += l.ids.len() as f64;
        recall += r;
        let e = by_cat.entry(l.category).or_default();
        e.0 += r;
        e.1 += 1.0;
    }
    let n = lists.len().max(1) as f64;
    PoolStats {
        mean_size: size / n,
        recall: recall / n,
        recall_by_category: by_cat.into_iter().map(|(c, (r, k))| (c.to_string(), r / k)).collect(),
    }
}

/// A 64-bit key from a seed and a list's identity (deterministic shuffles).
fn shuffle_key(seed: u64, salt: &str, l: &EvalList) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(salt.as_bytes());
    h.update(&(l.conv as u64).to_le_bytes());
    h.update(&(l.question as u64).to_le_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(bytes)
}

/// Splits lists into two random halves (the first gets the odd one).
fn halves<'a>(lists: &[&'a EvalList], seed: u64, salt: &str) -> (Vec<&'a EvalList>, Vec<&'a EvalList>) {
    let mut shuffled: Vec<&EvalList> = lists.to_vec();
    shuffled.sort_by_cached_key(|l| (shuffle_key(seed, salt, l), l.question));
    let cut = shuffled.len().div_ceil(2);
    let second = shuffled.split_off(cut);
    (shuffled, second)
}

/// A user's past and future questions for a per-user seed.
pub fn user_halves<'a>(lists: &[&'a EvalList], seed: u32) -> (Vec<&'a EvalList>, Vec<&'a EvalList>) {
    halves(lists, u64::from(seed), "per-user")
}

/// Every `every`-th list (from the first) is for validation; the rest for training.
fn split_every<'a>(lists: &[&'a EvalList], every: usize) -> (Vec<&'a EvalList>, Vec<&'a EvalList>) {
    let (mut fit, mut valid) = (Vec::new(), Vec::new());
    for (i, l) in lists.iter().enumerate() {
        if i % every == every - 1 { valid.push(*l) } else { fit.push(*l) }
    }
    (fit, valid)
}

/// A list and the sample the predictor sees for it.
pub type Patched<'a> = (&'a EvalList, Sample);

/// Training and validation lists of an across-users fold: every list of
/// the other conversations, half of each carrying the other half's history.
pub fn across_users_training(lists: &[EvalList], held_out: usize) -> (Vec<Patched<'_>>, Vec<Patched<'_>>) {
    let mut convs: Vec<usize> = lists.iter().map(|l| l.conv).filter(|&c| c != held_out).collect();
    convs.dedup();
    let mut all: Vec<Patched<'_>> = Vec::new();
    for c in convs {
        let own: Vec<&EvalList> = lists.iter().filter(|l| l.conv == c).collect();
        let (with_history, without) = halves(&own, 0, "across-users history");
        let history = History::of(&without);
        all.extend(with_history.iter().map(|l| (*l, history.patch(l))));
        all.extend(without.iter().map(|l| (*l, l.sample.clone())));
    }
    let (mut train, mut valid) = (Vec::new(), Vec::new());
    for (i, s) in all.into_iter().enumerate() {
        if i % VALID_EVERY == 0 { valid.push(s) } else { train.push(s) }
    }
    (train, valid)
}

/// Usage history: per memory, times injected and times useful.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    counts: HashMap<MemoryId, (u32, f32)>,
}

impl History {
    /// What one answered question leaves: its baseline top injected, its pooled evidence useful.
    fn contribution(l: &EvalList) -> Vec<(&MemoryId, u32, f32)> {
        let mut out: Vec<(&MemoryId, u32, f32)> = Vec::new();
        let order = order_by_score(&l.baseline);
        for (rank, &i) in order.iter().enumerate() {
            let injected = u32::from(rank < HISTORY_INJECTED);
            let useful = l.sample.labels[i].max(0.0);
            if injected > 0 || useful > 0.0 {
                out.push((&l.ids[i], injected, useful));
            }
        }
        out
    }

    /// The history the answered `lists` leave.
    pub fn of(lists: &[&EvalList]) -> History {
        let mut h = History::default();
        for l in lists {
            for (id, injected, useful) in History::contribution(l) {
                let e = h.counts.entry(id.clone()).or_default();
                e.0 += injected;
                e.1 += useful;
            }
        }
        h
    }

    /// This history without what `l` itself contributed (a list never sees its own labels).
    pub fn without(&self, l: &EvalList) -> History {
        let mut h = self.clone();
        for (id, injected, useful) in History::contribution(l) {
            if let Some(e) = h.counts.get_mut(id) {
                e.0 = e.0.saturating_sub(injected);
                e.1 = (e.1 - useful).max(0.0);
            }
        }
        h
    }

    /// Times injected and useful of a memory.
    pub fn get(&self, id: &MemoryId) -> (u32, f32) {
        self.counts.get(id).copied().unwrap_or_default()
    }

    /// `l`'s sample with its candidates' history signals set from this history.
    pub fn patch(&self, l: &EvalList) -> Sample {
        let mut s = l.sample.clone();
        for (c, id) in s.candidates.iter_mut().zip(&l.ids) {
            let (injected, useful) = self.get(id);
            c.signals.times_injected = injected;
            c.signals.times_useful = useful;
        }
        s
    }
}

/// Trains a model: a generic base from scratch (see [`generic_base`]), or
/// continuing `base` as the trainer continues a serving model.
fn train_model(
    base: Option<&Model>,
    train: &[Sample],
    valid: &[Sample],
    model_config: &ModelConfig,
    seed: u64,
) -> Result<(Model, predictor::train::TrainReport)> {
    let mut tc = train_config(base.is_some(), seed);
    let mut model = match base {
        Some(m) => m.clone(),
        None => {
            let mut m = Model::new(*model_config, seed).map_err(|e| Error::predictor("initialise a model", e))?;
            generic_base(&mut m, &mut tc);
            m
        }
    };
    let mut opt = AdamState::new(&model);
    let report = predictor::train::train(&mut model, &mut opt, train, valid, &tc, &mut || false)
        .map_err(|e| Error::predictor("train", e))?;
    Ok((model, report))
}

fn score(model: &Model, sample: &Sample) -> Result<Vec<f32>> {
    let cands: Vec<_> = sample.candidates.iter().map(OwnedCandidate::as_candidate).collect();
    model.score(&sample.query.as_query(), &cands).map_err(|e| Error::predictor("score a list", e))
}

/// α from the predictor's success rate against the baseline on `valid`.
fn alpha_from(outcomes: impl Iterator<Item = (f32, f32)>) -> f32 {
    let (mut n, mut success) = (0u32, 0.0f32);
    for (p, b) in outcomes {
        n += 1;
        success += if p > b + 1e-6 {
            1.0
        } else if (p - b).abs() <= 1e-6 {
            0.5
        } else {
            0.0
        };
    }
    if n == 0 {
        return 1.0;
    }
    let rate = success / n as f32;
    alpha_for(rate > COLD_START_SUCCESS, u32::MAX, rate)
}

fn earned_alpha(model: &Model, valid: &[Patched<'_>]) -> Result<f32> {
    let mut outcomes = Vec::with_capacity(valid.len());
    for (l, s) in valid {
        let p = score(model, s)?;
        outcomes.push((
            predictor::metrics::ndcg_from_scores(&p, &s.labels, 10),
            predictor::metrics::ndcg_from_scores(&l.baseline, &s.labels, 10),
        ));
    }
    Ok(alpha_from(outcomes.into_iter()))
}

/// Adds the four rankings of one list to `table`.
fn add_rankings(
    table: &mut Table,
    l: &EvalList,
    sample: &Sample,
    model: Option<(&Model, f32)>,
    config: &Config,
) -> Result<()> {
    table.add(RANKINGS[0], l.category, &query_metrics(&l.bm25.iter().map(String::as_str).collect::<Vec<_>>(), &rel(l)));
    table.add(RANKINGS[1], l.category, &query_metrics(&l.ranked_turns(&l.baseline), &rel(l)));
    let (predicted, alpha) = match model {
        Some((m, alpha)) => (score(m, sample)?, alpha),
        None => (l.baseline.clone(), 1.0),
    };
    table.add(RANKINGS[2], l.category, &query_metrics(&l.ranked_turns(&predicted), &rel(l)));
    let rb = ranks_from_scores(&l.baseline);
    let rp = ranks_from_scores(&predicted);
    let n = u32::try_from(l.ids.len()).unwrap_or(u32::MAX);
    let fused: Vec<f32> =
        (0..l.ids.len()).map(|i| rrf(alpha, config.predictor.rrf_k, Some(rb[i]), Some(rp[i]), n)).collect();
    table.add(RANKINGS[3], l.category, &query_metrics(&l.ranked_turns(&fused), &rel(l)));
    Ok(())
}

fn rel(l: &EvalList) -> BTreeSet<&str> {
    l.relevant.iter().map(String::as_str).collect()
}

impl Report {
    /// The table printed on stdout.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "LoCoMo: {} conversation(s), {} questions (categories 1-4){}, pool {:.0} memories with {:.3} of the evidence\n",
            self.conversations.len(),
            self.questions,
            if self.observations { ", turns and observations" } else { "" },
            self.pool.mean_size,
            self.pool.recall
        ));
        let n = &self.notes;
        out.push_str(&format!(
            "dataset repairs: {} evidence strings repaired, {} unknown evidence ids dropped, {} questions without evidence excluded\n",
            n.evidence_repaired, n.evidence_unknown, n.questions_without_evidence
        ));
        for (title, p) in [
            ("across users (leave one conversation out)", &self.across_users),
            (&*format!("per user (fine-tuned on half of each user's questions, {} seeds)", self.seeds), &self.per_user),
        ] {
            out.push_str(&format!("\n{title}, mean α {:.2}\n", p.alpha));
            out.push_str("ranking      R@1    R@5    R@10   R@50   NDCG@10  MRR\n");
            for name in RANKINGS {
                if let Some(m) = p.table.overall.get(name) {
                    out.push_str(&format!(
                        "{name:<10} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>6.3}\n",
                        m.r1, m.r5, m.r10, m.r50, m.ndcg10, m.mrr
                    ));
                }
            }
            out.push_str("R@10 / NDCG@10 by category:\n");
            for (cat, by) in &p.table.by_category {
                let label = cat.parse::<u8>().map_or("?", category_name);
                let cells: Vec<String> = RANKINGS
                    .iter()
                    .filter_map(|r| by.get(*r).map(|m| format!("{r} {:.3}/{:.3}", m.r10, m.ndcg10)))
                    .collect();
                let q = by.values().next().map_or(0, |m| m.queries);
                out.push_str(&format!("  {cat} {label:<11} n={q:<4} {}\n", cells.join("  ")));
            }
        }
        out.push_str(&format!("\n{:.1} s ({:.1} s building pools)\n", self.seconds, self.seconds_lists));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::locomo;

    /// Three small conversations of our own: turns about distinct topics and
    /// one question per topic whose evidence is that turn.
    fn dataset() -> Dataset {
        let topics = [
            ("adopted a grey cat called Pixel", "What pet did {a} adopt?"),
            ("ran the Berlin marathon in four hours", "Which marathon did {a} run?"),
            ("started learning the cello", "Which instrument is {a} learning?"),
            ("painted a sunrise over the lake", "What did {a} paint?"),
            ("moved to a flat near the harbour", "Where did {a} move?"),
            ("planted tomatoes and basil", "What did {a} plant?"),
            ("visited grandparents in Lisbon", "Whom did {a} visit in Lisbon?"),
            ("baked sourdough bread on Sunday", "What did {a} bake?"),
        ];
        let convs: Vec<serde_json::Value> = ["Ann", "Bea", "Cid"]
            .iter()
            .enumerate()
            .map(|(c, a)| {
                let mut turns = Vec::new();
                let mut qa = Vec::new();
                for (i, (fact, q)) in topics.iter().enumerate() {
                    let dia = format!("D1:{}", 2 * i + 1);
                    turns.push(serde_json::json!({"speaker": a, "dia_id": dia, "text": format!("I {fact}.")}));
                    turns.push(serde_json::json!({"speaker": "Zed", "dia_id": format!("D1:{}", 2 * i + 2),
                                                  "text": "That sounds lovely, tell me more."}));
                    qa.push(serde_json::json!({"question": q.replace("{a}", a), "answer": "x",
                                               "evidence": [dia], "category": 1 + (i % 4)}));
                }
                serde_json::json!({
                    "sample_id": format!("conv-{c}"),
                    "conversation": {"speaker_a": a, "speaker_b": "Zed",
                                     "session_1_date_time": "10:00 am on 2 March, 2023", "session_1": turns},
                    "qa": qa,
                })
            })
            .collect();
        locomo::parse(&serde_json::Value::Array(convs)).expect("parses")
    }

    fn lists() -> Vec<EvalList> {
        let d = dataset();
        let config = Config::default();
        let mc = ModelConfig { native_dim: 0, ..ModelConfig::default() };
        d.conversations
            .iter()
            .enumerate()
            .flat_map(|(i, c)| conversation_lists(c, i, &config, &mc, false).expect("lists"))
            .collect()
    }

    #[test]
    fn lists_label_the_evidence_turn_and_bm25_finds_it() {
        let lists = lists();
        assert_eq!(lists.len(), 24);
        for l in &lists {
            assert_eq!(l.relevant.len(), 1);
            let labelled: BTreeSet<&str> =
                l.turns.iter().zip(&l.sample.labels).filter(|(_, y)| **y > 0.0).map(|(t, _)| t.as_str()).collect();
            assert_eq!(labelled, rel(l), "labels are the evidence turns in the pool");
            assert_eq!(l.bm25.first(), l.relevant.iter().next(), "BM25 puts the only matching turn first");
            assert!(l.sample.candidates.iter().all(|c| c.signals.times_injected == 0 && c.signals.times_useful == 0.0));
        }
    }

    #[test]
    fn per_user_halves_are_disjoint_cover_the_user_and_change_with_the_seed() {
        let lists = lists();
        let user: Vec<&EvalList> = lists.iter().filter(|l| l.conv == 1).collect();
        let mut splits = BTreeSet::new();
        for seed in 0..6 {
            let (past, future) = user_halves(&user, seed);
            let p: BTreeSet<usize> = past.iter().map(|l| l.question).collect();
            let f: BTreeSet<usize> = future.iter().map(|l| l.question).collect();
            assert!(p.is_disjoint(&f), "seed {seed}: a question in both halves");
            assert_eq!(p.len() + f.len(), user.len());
            assert_eq!(p.len(), f.len());
            splits.insert(p.into_iter().collect::<Vec<_>>());
        }
        assert!(splits.len() > 1, "seeds draw different halves");
    }

    #[test]
    fn a_held_out_conversation_contributes_nothing_to_training() {
        let lists = lists();
        for held_out in 0..3 {
            let (train, valid) = across_users_training(&lists, held_out);
            assert_eq!(train.len() + valid.len(), 16);
            for (l, s) in train.iter().chain(&valid) {
                assert_ne!(l.conv, held_out);
                // History only ever names memories of the list's own conversation.
                for (c, id) in s.candidates.iter().zip(&l.ids) {
                    if c.signals.times_injected > 0 || c.signals.times_useful > 0.0 {
                        assert!(id.0.starts_with(&format!("locomo-conv-{}-", l.conv)), "{id:?}");
                    }
                }
            }
            // The held-out conversation's memories appear in no training list.
            let prefix = format!("locomo-conv-{held_out}-");
            assert!(train.iter().chain(&valid).all(|(l, _)| l.ids.iter().all(|id| !id.0.starts_with(&prefix))));
        }
    }

    #[test]
    fn a_list_never_sees_its_own_labels() {
        let lists = lists();
        let user: Vec<&EvalList> = lists.iter().filter(|l| l.conv == 0).collect();
        let (past, future) = user_halves(&user, 2);
        let history = History::of(&past);
        for l in &past {
            // Leave-one-out equals the history of the others, computed afresh.
            let others: Vec<&EvalList> = past.iter().copied().filter(|o| o.question != l.question).collect();
            assert_eq!(history.without(l).patch(l).candidates, History::of(&others).patch(l).candidates);
            // Every question here has its own evidence turn: none of it is marked useful.
            let own = history.without(l).patch(l);
            for ((c, t), y) in own.candidates.iter().zip(&l.turns).zip(&l.sample.labels) {
                if *y > 0.0 {
                    assert_eq!(c.signals.times_useful, 0.0, "{t} shows its own label");
                }
            }
            // The full history does carry it (so the test above can fail).
            let full = history.patch(l);
            assert!(
                full.candidates.iter().zip(&l.sample.labels).any(|(c, y)| *y > 0.0 && c.signals.times_useful > 0.0)
            );
        }
        // The future's history comes from the past only: no future label is in it.
        for l in &future {
            let s = history.patch(l);
            for (c, y) in s.candidates.iter().zip(&l.sample.labels) {
                if *y > 0.0 {
                    assert_eq!(c.signals.times_useful, 0.0);
                }
            }
        }
    }

    #[test]
    fn one_conversation_runs_both_protocols_end_to_end() {
        let d = dataset();
        let opts = Options { seeds: 2, conversations: vec!["conv-0".into(), "conv-1".into()], ..Options::default() };
        let mut stages = Vec::new();
        let report =
            run(Path::new("synthetic"), &d, &Config::default(), &opts, &mut |s: &str, _, _| stages.push(s.to_owned()))
                .expect("runs");
        assert_eq!(report.conversations, ["conv-0", "conv-1"]);
        assert_eq!(report.questions, 16);
        assert_eq!(report.folds.len(), 2);
        assert_eq!(report.across_users.table.overall["bm25"].queries, 16);
        assert_eq!(report.per_user.table.overall["predictor"].queries, 2 * 2 * 4);
        assert!(report.folds.iter().all(|f| f.train_lists + f.valid_lists == 16), "the two other conversations train");
        assert!(report.pool.recall > 0.99);
        assert!(stages.iter().any(|s| s == "done"));
        assert!(report.render().contains("per user"));
        let unknown = Options { conversations: vec!["conv-9".into()], ..Options::default() };
        assert!(run(Path::new("synthetic"), &d, &Config::default(), &unknown, &mut |_: &str, _, _| {}).is_err());
    }
}
