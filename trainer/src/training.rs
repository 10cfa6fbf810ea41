//! One gated training run: choose the data, train within the time budget,
//! evaluate the validation gates on the canary set, and promote the new
//! weights atomically only when every gate passes.
//!
//! **Data.** Every session scored with confidence ≥ 0.6 that is not a canary
//! session gives one list per served ranking (see [`shared::domain::training::data`]),
//! weighted by the scorer's confidence. About one trainable session in ten
//! (a fixed hash rule) is held out for early stopping once there are 20. A
//! normal run takes the newest 400 sessions plus, when older ones exist, a
//! replay buffer of the 20 best older ones (by score × confidence); a drift
//! retrain takes the newest 80 plus the best 20 older ones (80/20, seed 002
//! "Concept Drift Detection") and starts from fresh weights. Replayed
//! history ([`crate::history`]) adds the labelled lists of each project's
//! earlier sessions (a session's lists sharing at most half a served
//! list's weight), and puts those of its
//! later sessions in the canary set, so that the gates judge a model on
//! sessions after the ones it learned from.
//!
//! **Start.** The serving model and its optimizer state (`models/<hash>.adam`,
//! when its shapes match) continue training for 3 epochs at 0.3× the learning
//! rate (small steps, so that its rankings stay stable); the first model starts fresh, or from
//! `--base-weights` (seed 002 "Pre-Trained Model Path"), and trains for 10
//! epochs, as does a drift retrain. Early stopping on the validation split
//! (patience 3) and the time budget can end any of them sooner.
//!
//! **Gates**, all required: every training loss finite (no skipped non-finite
//! batch); at least one optimizer step; at least [`canary::MIN_LISTS`]
//! canary lists with something relevant; candidate score variance > 0 on the
//! canary; top-5 overlap with the serving model ≥ 60% and canary NDCG@10 not
//! lower than the serving model's by more than 0.15 (both waived for the first
//! model and for a drift retrain, whose purpose is to replace the serving
//! model); canary NDCG@10 not below the baseline's.
//!
//! **Promotion.** Weights (`models/<blake3>.ckpt`) and the optimizer state
//! (`.adam`) are written atomically (temporary file, fsync, rename, directory
//! fsync); then `training.run` and `model.promoted` are appended together;
//! then `models/current` is replaced atomically. A crash between the events
//! and the pointer is completed by the next run ([`reconcile`]). On a gate
//! failure nothing is written but the `training.run` event with the reason.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use predictor::train::{self, AdamState, Averaging, StopReason, TrainConfig, TrainReport};
use rusqlite::OptionalExtension;
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::rank::state::MIN_SCORER_CONFIDENCE;
use shared::domain::training::data::{self, BuiltList, ScoredSession};
use shared::storage::event::{Body, CanaryMetrics, ModelPromoted, TrainingRun};
use shared::storage::journal::Journal;
use shared::storage::models;
use shared::storage::store::Store;

use crate::canary::{self, is_canary};
use crate::error::{Error, Result, Sql};
use crate::history::{self, HistoryEval};

/// Sessions of a normal run's recent window.
pub const RECENT_SESSIONS: usize = 400;
/// Sessions of a drift retrain's recent window.
pub const DRIFT_RECENT_SESSIONS: usize = 80;
/// Older sessions replayed (seed 002 `replayBufferSize`).
pub const REPLAY_SESSIONS: usize = 20;
/// Minimum top-5 overlap with the serving model.
pub const MIN_TOP5_OVERLAP: f32 = 0.6;
/// Largest allowed canary NDCG drop from the serving model.
pub const MAX_NDCG_DROP: f32 = 0.15;
/// Trainable sessions before a validation split is held out.
pub const VALIDATION_FROM: usize = 20;
/// Epochs of a model's first training (and of a drift retrain).
pub const FRESH_EPOCHS: usize = 10;
/// Epochs when continuing the serving model: small steps keep its rankings
/// stable enough for the top-5 overlap gate.
pub const CONTINUE_EPOCHS: usize = 3;
/// Learning-rate factor when continuing the serving model.
pub const CONTINUE_LR_FACTOR: f32 = 0.3;
/// Checkpoints of this many newest promoted versions are kept (plus `current`).
pub const KEEP_VERSIONS: usize = 3;

/// What to train.
#[derive(Clone, Debug)]
pub struct TrainRequest<'a> {
    /// The time stamped on events and used for the frozen canary set.
    pub now: Ts,
    /// A drift-recovery retrain.
    pub drift: bool,
    /// Weights to start the first model from.
    pub base_weights: Option<&'a Path>,
    /// Hard limit on training.
    pub budget: Duration,
    /// Stops training early when set.
    pub shutdown: &'a Shutdown,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct TrainOutcome {
    /// The recorded run.
    pub run: TrainingRun,
    /// The promotion, when the gates passed.
    pub promoted: Option<ModelPromoted>,
    /// The version serving before the run.
    pub serving_version: Option<u64>,
    /// What the replayed history added, and the model against the baseline
    /// on its held-out later sessions (`None` without replayed lists).
    pub history: Option<HistoryEval>,
}

/// The serving model as the trainer sees it.
#[derive(Clone, Debug)]
pub struct Serving {
    /// Its weights (and config).
    pub model: Model,
    /// Its checkpoint's blake3.
    pub hash: String,
    /// Its version.
    pub version: u64,
    /// Steps and lists over its life.
    pub meta: TrainingMeta,
    /// Its provenance flags.
    pub flags: Flags,
}

/// Loads the serving model; an unreadable one is logged and treated as absent.
pub fn serving(paths: &Paths, store: &Store) -> Result<Option<Serving>> {
    let loaded = match models::load_current(paths, None) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the serving model cannot be read; training as if there were none");
            return Ok(None);
        }
    };
    let Some(loaded) = loaded else { return Ok(None) };
    let version: Option<i64> = store
        .conn()
        .query_row("SELECT MAX(model_version) FROM models WHERE checkpoint = ?1", [&loaded.hash], |r| r.get(0))
        .optional()
        .sql("find serving version")?
        .flatten();
    Ok(Some(Serving {
        version: version.map_or(loaded.checkpoint.meta.model_version, |v| v.max(0) as u64),
        hash: loaded.hash,
        meta: loaded.checkpoint.meta,
        flags: loaded.checkpoint.flags,
        model: loaded.checkpoint.model,
    }))
}

/// The highest version promoted so far.
pub fn latest_version(store: &Store) -> Result<Option<u64>> {
    let v: Option<i64> =
        store.conn().query_row("SELECT MAX(model_version) FROM models", [], |r| r.get(0)).sql("read versions")?;
    Ok(v.map(|v| v.max(0) as u64))
}

/// The training configuration of a run: a fresh model trains for
/// [`FRESH_EPOCHS`]; continuing from serving (or base) weights trains for
/// [`CONTINUE_EPOCHS`] at [`CONTINUE_LR_FACTOR`] times the learning rate.
pub fn train_config(continuing: bool, seed: u64) -> TrainConfig {
    let epochs = if continuing { CONTINUE_EPOCHS } else { FRESH_EPOCHS };
    let mut config = TrainConfig { seed, epochs, ..TrainConfig::default() };
    if continuing {
        config.adam.lr *= CONTINUE_LR_FACTOR;
        config.averaging = Averaging::WithStart;
    }
    config
}

/// Tensors a generic base model (trained across users, seed 002 "Pre-Trained
/// Model Path") keeps at zero and frozen. The value projection is a memory's
/// text prior independent of the query: which words make a memory worth
/// showing whatever is asked. That is a user's own vocabulary and does not
/// transfer: on LoCoMo a base that learns it ranks unseen users worse
/// (`engram-trainer eval locomo`: R@10 0.738 against 0.756 without it).
/// Per-user training continues from the base with the projection free again.
pub const USER_SPECIFIC_TENSORS: [&str; 1] = ["v_proj"];

/// Prepares a fresh model and its training configuration for a generic base
/// trained across users: the [`USER_SPECIFIC_TENSORS`] zeroed and frozen.
pub fn generic_base(model: &mut Model, config: &mut TrainConfig) {
    for name in USER_SPECIFIC_TENSORS {
        let (zeroed, frozen) = (model.zero_tensor(name), config.adam.scale(name, 0.0));
        debug_assert!(zeroed && frozen, "{name} names a tensor");
    }
}

/// The shape of a first model: text only, unless the memories carry
/// embeddings, in which case their most common dimension.
pub fn fresh_config(store: &Store) -> Result<ModelConfig> {
    let dim: Option<i64> = store
        .conn()
        .query_row(
            "SELECT dimensions FROM embeddings WHERE source_type = 'memory'
             GROUP BY dimensions ORDER BY COUNT(*) DESC, dimensions LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()
        .sql("read embedding dimensions")?;
    Ok(ModelConfig { native_dim: dim.map_or(0, |d| d.max(0) as usize), ..ModelConfig::default() })
}

fn salted_byte(salt: &[u8], key: &str) -> u8 {
    let mut h = blake3::Hasher::new();
    h.update(salt);
    h.update(key.as_bytes());
    h.finalize().as_bytes()[0]
}

/// Whether a trainable session is held out for early stopping (about one in ten).
pub fn is_validation(session: &ScoredSession) -> bool {
    salted_byte(b"engram-validation-v1:", session.session_key.as_str()) < 26
}

/// The sessions a run trains on: (train, validation).
pub fn select_sessions(scored: &[ScoredSession], drift: bool) -> (Vec<ScoredSession>, Vec<ScoredSession>) {
    let mut trainable: Vec<ScoredSession> = scored.iter().filter(|s| !is_canary(&s.session_key)).cloned().collect();
    trainable.sort_by(|a, b| b.scored_ms.cmp(&a.scored_ms).then_with(|| a.session_key.cmp(&b.session_key)));
    let recent_n = if drift { DRIFT_RECENT_SESSIONS } else { RECENT_SESSIONS };
    let older = trainable.split_off(trainable.len().min(recent_n));
    let mut replay = older;
    replay.sort_by(|a, b| {
        (b.score * b.confidence)
            .total_cmp(&(a.score * a.confidence))
            .then(b.scored_ms.cmp(&a.scored_ms))
            .then_with(|| a.session_key.cmp(&b.session_key))
    });
    replay.truncate(REPLAY_SESSIONS);
    trainable.extend(replay);
    if trainable.len() < VALIDATION_FROM {
        return (trainable, Vec::new());
    }
    trainable.into_iter().partition(|s| !is_validation(s))
}

fn finite(x: Option<f32>) -> Option<f32> {
    x.filter(|v| v.is_finite())
}

/// The validation gates (see the module docs); `Err` lists every failure.
pub fn gates(
    report: &TrainReport,
    metrics: &CanaryMetrics,
    canary_lists: usize,
    compare_to_serving: bool,
) -> std::result::Result<(), String> {
    let mut failures = Vec::new();
    let losses_finite =
        report.epochs.iter().all(|e| e.train_loss.is_finite() && e.valid_loss.is_none_or(f32::is_finite))
            && report.nonfinite_batches == 0;
    if !losses_finite {
        failures.push(format!("non-finite loss ({} skipped batches)", report.nonfinite_batches));
    }
    if report.steps == 0 {
        failures.push(match report.stop {
            StopReason::NoTrainableLists => "no trainable list (no label spread)".to_owned(),
            StopReason::Budget => "stopped by the time budget before the first step".to_owned(),
            _ => "no optimizer step".to_owned(),
        });
    }
    if canary_lists < canary::MIN_LISTS {
        failures.push(format!(
            "canary set too small ({canary_lists} lists with relevant memories, need {})",
            canary::MIN_LISTS
        ));
    }
    match metrics.score_variance {
        Some(v) if v > 1e-9 => {}
        Some(v) => failures.push(format!("canary score variance {v:.2e} is not above 0")),
        None => failures.push("no canary scores".to_owned()),
    }
    if compare_to_serving {
        match metrics.top5_overlap {
            Some(o) if o >= MIN_TOP5_OVERLAP => {}
            Some(o) => failures.push(format!("top-5 overlap with the serving model {o:.2} < {MIN_TOP5_OVERLAP:.2}")),
            None => failures.push("no canary list shared with the serving model".to_owned()),
        }
        if let (Some(c), Some(s)) = (metrics.ndcg, metrics.serving_ndcg)
            && c < s - MAX_NDCG_DROP
        {
            failures.push(format!("canary NDCG {c:.3} is more than {MAX_NDCG_DROP} below the serving model's {s:.3}"));
        }
    }
    match (metrics.ndcg, metrics.baseline_ndcg) {
        (Some(c), Some(b)) if c + 1e-6 < b => {
            failures.push(format!("canary NDCG {c:.3} is below the baseline's {b:.3}"))
        }
        (None, _) if canary_lists >= canary::MIN_LISTS => failures.push("no canary NDCG".to_owned()),
        _ => {}
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) }
}

fn lists_for(
    store: &Store,
    sessions: &[ScoredSession],
    config: &ModelConfig,
    tz: &jiff::tz::TimeZone,
) -> Result<Vec<BuiltList>> {
    canary::session_lists(store, sessions, true, &canary::options_for(config, tz))
}

/// Trains, gates and (on a pass) promotes. Appends the `training.run` event
/// (and `model.promoted`) through `journal`.
pub fn train_and_gate(journal: &mut Journal, config: &Config, req: &TrainRequest<'_>) -> Result<TrainOutcome> {
    let started = Instant::now();
    let paths = journal.paths().clone();
    let tz = config.time.zone();
    let serving = serving(&paths, journal.store())?;
    let version = latest_version(journal.store())?.max(serving.as_ref().map(|s| s.version)).unwrap_or(0) + 1;
    let run_id = shared::base::ids::generate_with_prefix("tr", req.now);

    // Where training starts.
    let (mut model, mut opt, mut flags, prior) = match (&serving, req.drift, req.base_weights) {
        (Some(s), false, _) => {
            let opt = match models::load_optimizer(&paths, &s.hash, Some(s.model.config())) {
                Ok(Some(full)) => full.optimizer.filter(|o| o.check_matches(&s.model).is_ok()),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "the serving model's optimizer state cannot be read; starting Adam afresh");
                    None
                }
            };
            let opt = opt.unwrap_or_else(|| AdamState::new(&s.model));
            (
                s.model.clone(),
                opt,
                Flags { fine_tuned: s.flags.fine_tuned || s.flags.pretrained_base, ..s.flags },
                s.meta.clone(),
            )
        }
        (Some(s), true, _) => {
            let m = Model::new(*s.model.config(), version)
                .map_err(|e| Error::predictor("initialise a model for the drift retrain", e))?;
            let opt = AdamState::new(&m);
            (m, opt, Flags::default(), TrainingMeta::default())
        }
        (None, _, Some(base)) => {
            let bytes = std::fs::read(base).map_err(|e| Error::io("read base weights", base, e))?;
            let ckpt = checkpoint::decode(&bytes, None)
                .map_err(|e| Error::predictor(format!("decode base weights {}", base.display()), e))?;
            let opt = ckpt
                .optimizer
                .filter(|o| o.check_matches(&ckpt.model).is_ok())
                .unwrap_or_else(|| AdamState::new(&ckpt.model));
            (ckpt.model, opt, Flags { pretrained_base: false, fine_tuned: true }, ckpt.meta)
        }
        (None, _, None) => {
            let m = Model::new(fresh_config(journal.store())?, version)
                .map_err(|e| Error::predictor("initialise the first model", e))?;
            let opt = AdamState::new(&m);
            (m, opt, Flags::default(), TrainingMeta::default())
        }
    };
    flags.pretrained_base = false;
    let model_config = *model.config();

    // Data.
    let store = journal.store();
    let scored = data::scored_sessions(store, MIN_SCORER_CONFIDENCE)?;
    let (train_sessions, valid_sessions) = select_sessions(&scored, req.drift);
    let mut train_lists = lists_for(store, &train_sessions, &model_config, &tz)?;
    let valid_lists = lists_for(store, &valid_sessions, &model_config, &tz)?;
    let (frozen, _) = canary::frozen_sessions(store, req.now)?;
    let mut canary_lists = canary::session_lists(store, &frozen, false, &canary::options_for(&model_config, &tz))?;
    // Replayed history: earlier sessions train (weighted below served lists),
    // later ones join the canary (see `crate::history`).
    let replayed = history::lists(store, &canary::options_for(&model_config, &tz))?;
    let held_range = canary_lists.len()..canary_lists.len() + replayed.held_out.len();
    let mut history_eval = (!replayed.train.is_empty() || !replayed.held_out.is_empty()).then(|| HistoryEval {
        train_lists: replayed.train.len(),
        train_sessions: replayed.train_sessions,
        held_lists: canary::evaluable(&replayed.held_out),
        held_sessions: replayed.held_sessions,
        by_source: replayed.by_source.clone(),
        model_ndcg: None,
        baseline_ndcg: None,
    });
    train_lists.extend(replayed.train);
    canary_lists.extend(replayed.held_out);
    tracing::info!(
        version,
        train_sessions = train_sessions.len(),
        train_lists = train_lists.len(),
        valid_lists = valid_lists.len(),
        canary_lists = canary_lists.len(),
        drift = req.drift,
        "training"
    );

    // Train.
    let continuing = serving.is_some() && !req.drift;
    let train_config = train_config(continuing, version);
    let samples: Vec<_> = train_lists.iter().map(|l| l.sample.clone()).collect();
    let valid: Vec<_> = valid_lists.iter().map(|l| l.sample.clone()).collect();
    let budget = req.budget;
    let shutdown = req.shutdown;
    let clock = Instant::now();
    let mut should_stop = || clock.elapsed() >= budget || shutdown.requested();
    let serving_version = serving.as_ref().map(|s| s.version);
    let report = match train::train(&mut model, &mut opt, &samples, &valid, &train_config, &mut should_stop) {
        Ok(r) => r,
        Err(e) => {
            // The predictor refused the data: a failed run, recorded like a gate failure.
            let run = TrainingRun {
                run_id,
                model_version: version,
                loss: -1.0,
                sample_count: u32::try_from(samples.len()).unwrap_or(u32::MAX),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                failure: Some(format!("training failed: {e}")),
                drift_retrain: req.drift,
                ..TrainingRun::default()
            };
            tracing::error!(error = %e, "training failed; the serving model keeps serving");
            journal.append(&[journal.event(req.now, None, Body::TrainingRun(run.clone()))])?;
            return Ok(TrainOutcome { run, promoted: None, serving_version, history: history_eval });
        }
    };
    for e in &report.epochs {
        tracing::info!(epoch = e.epoch, train_loss = e.train_loss, valid_loss = ?e.valid_loss, valid_ndcg10 = ?e.valid_ndcg10, steps = e.steps, "epoch");
    }

    // Canary.
    let compare_to_serving = serving.is_some() && !req.drift;
    let evaluated = (|| -> Result<(CanaryMetrics, bool)> {
        let candidate_scores = canary::score_lists(&model, &canary_lists)?;
        let serving_eval = match &serving {
            Some(s) => {
                let lists = if s.model.config() == &model_config {
                    canary_lists.clone()
                } else {
                    let opts = canary::options_for(s.model.config(), &tz);
                    let mut lists = canary::session_lists(store, &frozen, false, &opts)?;
                    lists.extend(history::lists(store, &opts)?.held_out);
                    lists
                };
                let scores = canary::score_lists(&s.model, &lists)?;
                Some((lists, scores))
            }
            None => None,
        };
        let metrics = canary::metrics(
            &canary_lists,
            &candidate_scores,
            serving_eval.as_ref().map(|(l, s)| (l.as_slice(), s.as_slice())),
        );
        if let Some(h) = history_eval.as_mut() {
            let held = &canary_lists[held_range.clone()];
            let baseline: Vec<Vec<f32>> = held.iter().map(|l| l.baseline.clone()).collect();
            h.model_ndcg = canary::mean_ndcg(held, &candidate_scores[held_range.clone()]);
            h.baseline_ndcg = canary::mean_ndcg(held, &baseline);
        }
        Ok((metrics, candidate_scores.iter().flatten().all(|x| x.is_finite())))
    })();
    let (metrics, scores_finite, mut verdict) = match evaluated {
        Ok((metrics, finite)) => {
            let verdict = gates(&report, &metrics, canary::evaluable(&canary_lists), compare_to_serving);
            (metrics, finite, verdict)
        }
        Err(Error::Predictor { source, .. }) => {
            (CanaryMetrics::default(), true, Err(format!("the canary set could not be scored: {source}")))
        }
        Err(e) => return Err(e),
    };
    if !scores_finite {
        verdict = Err(match verdict {
            Ok(()) => "non-finite canary scores".to_owned(),
            Err(e) => format!("non-finite canary scores; {e}"),
        });
    }
    if shutdown.requested() {
        verdict = Err("interrupted by a shutdown request".to_owned());
    }

    let kept = report.best_epoch.and_then(|b| report.epochs.iter().find(|e| e.epoch == b)).or(report.epochs.last());
    let mut run = TrainingRun {
        run_id: run_id.clone(),
        model_version: version,
        loss: kept.map(|e| e.train_loss).filter(|l| l.is_finite()).unwrap_or(-1.0),
        valid_loss: finite(kept.and_then(|e| e.valid_loss)),
        sample_count: u32::try_from(samples.len()).unwrap_or(u32::MAX),
        epochs: u32::try_from(report.epochs.len()).unwrap_or(u32::MAX),
        steps: report.steps,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        canary: metrics,
        gates_passed: verdict.is_ok(),
        failure: verdict.as_ref().err().cloned(),
        checkpoint: None,
        drift_retrain: req.drift,
    };
    let Ok(()) = verdict else {
        tracing::warn!(version, failure = ?run.failure, "validation gates failed; the serving model keeps serving");
        journal.append(&[journal.event(req.now, None, Body::TrainingRun(run.clone()))])?;
        return Ok(TrainOutcome { run, promoted: None, serving_version, history: history_eval });
    };

    // Promote: files, then events, then the pointer.
    let meta = TrainingMeta {
        model_version: version,
        steps: prior.steps + report.steps,
        trained_lists: prior.trained_lists + report.trained_lists,
        timestamp_ms: req.now.0,
        notes: format!(
            "run {run_id}: {} lists, {} epochs, canary NDCG {}",
            samples.len(),
            report.epochs.len(),
            run.canary.ndcg.map_or("-".to_owned(), |n| format!("{n:.3}"))
        ),
    };
    let weights = checkpoint::encode(&Checkpoint { flags, model: model.clone(), optimizer: None, meta: meta.clone() });
    let hash = models::write_checkpoint(&paths, &weights)?;
    let full = checkpoint::encode(&Checkpoint { flags, model, optimizer: Some(opt), meta });
    models::write_optimizer(&paths, &hash, &full)?;
    run.checkpoint = Some(hash.clone());
    run.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let promoted = ModelPromoted { model_version: version, checkpoint: hash.clone(), run_id };
    journal.append(&[
        journal.event(req.now, None, Body::TrainingRun(run.clone())),
        journal.event(req.now, None, Body::ModelPromoted(promoted.clone())),
    ])?;
    models::promote(&paths, &hash)?;
    tracing::info!(version, %hash, "promoted");
    if let Err(e) = prune(&paths, journal.store()) {
        tracing::warn!(error = %e, "could not remove old checkpoints");
    }
    Ok(TrainOutcome { run, promoted: Some(promoted), serving_version, history: history_eval })
}

/// Completes an interrupted promotion: when the newest promoted checkpoint is
/// not what `models/current` names but is readable, points `current` at it.
/// Returns the hash promoted, if any.
pub fn reconcile(paths: &Paths, store: &Store) -> Result<Option<String>> {
    let latest: Option<String> = store
        .conn()
        .query_row("SELECT checkpoint FROM models ORDER BY model_version DESC LIMIT 1", [], |r| r.get(0))
        .optional()
        .sql("read latest model")?;
    let Some(latest) = latest else { return Ok(None) };
    let current = models::current_hash(paths).unwrap_or(None);
    if current.as_deref() == Some(latest.as_str()) {
        return Ok(None);
    }
    match models::load(paths, &latest, None) {
        Ok(_) => {
            models::promote(paths, &latest)?;
            tracing::warn!(hash = %latest, "completed an interrupted promotion");
            Ok(Some(latest))
        }
        Err(e) => {
            tracing::error!(error = %e, hash = %latest, "the newest promoted checkpoint cannot be read; keeping models/current");
            Ok(None)
        }
    }
}

/// Removes temporary files left by an interrupted write, and checkpoints that
/// are neither `current` nor among the newest promoted versions. Only the
/// trainer writes `models/`, and it holds the trainer lock.
pub fn prune(paths: &Paths, store: &Store) -> Result<()> {
    let dir = paths.models();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("list", &dir, e)),
    };
    let mut keep: BTreeSet<String> = {
        let mut stmt = store
            .conn()
            .prepare("SELECT checkpoint FROM models ORDER BY model_version DESC LIMIT ?1")
            .sql("list promoted models")?;
        stmt.query_map([KEEP_VERSIONS as i64], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
            .sql("list promoted models")?
    };
    if let Ok(Some(current)) = models::current_hash(paths) {
        keep.insert(current);
    }
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", &dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let stale_temp = name.starts_with('.') && name.ends_with(".tmp");
        let stale_model = match name.rsplit_once('.') {
            Some((hash, "ckpt" | "adam")) => hash.len() == 64 && !keep.contains(hash),
            _ => false,
        };
        if stale_temp || stale_model {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            tracing::debug!(file = %path.display(), "removed");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use predictor::train::EpochStats;
    use shared::base::ids::SessionKey;

    fn report(loss: f32, steps: u64) -> TrainReport {
        TrainReport {
            epochs: vec![EpochStats { epoch: 1, train_loss: loss, valid_loss: None, valid_ndcg10: None, steps }],
            steps,
            trained_lists: steps,
            skipped_lists: 0,
            skipped_valid_lists: 0,
            nonfinite_batches: 0,
            initial_valid: None,
            best_epoch: None,
            stop: StopReason::Completed,
        }
    }

    fn metrics(ndcg: f32, serving: Option<f32>, baseline: f32, overlap: Option<f32>) -> CanaryMetrics {
        CanaryMetrics {
            ndcg: Some(ndcg),
            ndcg_delta: serving.map(|s| ndcg - s),
            serving_ndcg: serving,
            baseline_ndcg: Some(baseline),
            score_variance: Some(0.3),
            topk_churn: None,
            top5_overlap: overlap,
            sessions: 10,
        }
    }

    #[test]
    fn a_generic_base_keeps_the_user_specific_tensors_at_zero_while_the_rest_trains() {
        use predictor::features::CandidateSignals;
        use predictor::model::{OwnedCandidate, OwnedQuery};
        use predictor::train::Sample;
        let config = ModelConfig { native_dim: 0, dim: 8, value_dim: 4, hash_buckets: 64, ..ModelConfig::default() };
        let list = |k: u32| Sample {
            query: OwnedQuery { tokens: vec![k % 64, 7], ..OwnedQuery::default() },
            candidates: (0..6u32)
                .map(|c| OwnedCandidate {
                    tokens: vec![(k + c) % 64, 3],
                    signals: CandidateSignals { importance: c as f32 / 6.0, ..CandidateSignals::default() },
                    ..OwnedCandidate::default()
                })
                .collect(),
            labels: (0..6).map(|c| f32::from(u8::from(c == k as usize % 6))).collect(),
            weight: 1.0,
        };
        let samples: Vec<Sample> = (0..12).map(list).collect();
        let mut model = Model::new(config, 5).expect("model");
        let mut tc = train_config(false, 5);
        generic_base(&mut model, &mut tc);
        let before = model.clone();
        let mut opt = AdamState::new(&model);
        train::train(&mut model, &mut opt, &samples, &[], &tc, &mut || false).expect("train");
        for name in USER_SPECIFIC_TENSORS {
            assert!(model.tensor(name).expect("tensor").iter().all(|&x| x == 0.0), "{name} stays zero");
        }
        assert_ne!(model.tensor("gate"), before.tensor("gate"), "the rest of the model trains");
        // Continuing from the base frees the projection again.
        let continuing = train_config(true, 6);
        for name in USER_SPECIFIC_TENSORS {
            let i = predictor::model::PARAM_NAMES.iter().position(|&n| n == name).expect("name");
            assert!(continuing.adam.lr_scale[i] > 0.0);
        }
    }

    #[test]
    fn every_gate_can_fail_alone() {
        let ok = metrics(0.7, Some(0.65), 0.6, Some(0.8));
        assert_eq!(gates(&report(0.5, 10), &ok, 10, true), Ok(()));
        let fail =
            |r: &TrainReport, m: &CanaryMetrics, lists: usize, serving: bool| gates(r, m, lists, serving).unwrap_err();
        assert!(fail(&report(f32::NAN, 10), &ok, 10, true).contains("non-finite loss"));
        let mut skipped = report(0.5, 10);
        skipped.nonfinite_batches = 1;
        assert!(fail(&skipped, &ok, 10, true).contains("non-finite loss"));
        let mut none = report(0.5, 0);
        none.stop = StopReason::NoTrainableLists;
        assert!(fail(&none, &ok, 10, true).contains("no trainable list"));
        assert!(fail(&report(0.5, 10), &ok, 2, true).contains("canary set too small"));
        let flat = CanaryMetrics { score_variance: Some(0.0), ..ok.clone() };
        assert!(fail(&report(0.5, 10), &flat, 10, true).contains("variance"));
        let churn = metrics(0.7, Some(0.65), 0.6, Some(0.4));
        assert!(fail(&report(0.5, 10), &churn, 10, true).contains("top-5 overlap"));
        let worse = metrics(0.62, Some(0.8), 0.5, Some(0.9));
        assert!(fail(&report(0.5, 10), &worse, 10, true).contains("below the serving"));
        let within = metrics(0.66, Some(0.8), 0.5, Some(0.9));
        assert_eq!(gates(&report(0.5, 10), &within, 10, true), Ok(()), "a drop of 0.14 is allowed");
        let below = metrics(0.55, Some(0.56), 0.6, Some(0.9));
        assert!(fail(&report(0.5, 10), &below, 10, true).contains("below the baseline"));
    }

    #[test]
    fn first_model_and_drift_retrains_skip_the_serving_gates() {
        let m = metrics(0.7, Some(0.9), 0.6, Some(0.1));
        assert!(gates(&report(0.5, 10), &m, 10, true).is_err());
        assert_eq!(gates(&report(0.5, 10), &m, 10, false), Ok(()));
        let below = metrics(0.5, None, 0.6, None);
        assert!(gates(&report(0.5, 10), &below, 10, false).unwrap_err().contains("baseline"), "never waived");
    }

    fn session(i: usize, score: f32) -> ScoredSession {
        ScoredSession {
            session_key: SessionKey::new("claude", &format!("s{i}")),
            project: None,
            score,
            confidence: 0.9,
            scored_ms: i as i64,
        }
    }

    #[test]
    fn selection_holds_out_canary_sessions_and_replays_the_best_old_ones() {
        let scored: Vec<ScoredSession> = (0..600).map(|i| session(i, if i % 3 == 0 { 0.95 } else { 0.3 })).collect();
        let (train, valid) = select_sessions(&scored, false);
        let all: Vec<&ScoredSession> = train.iter().chain(&valid).collect();
        assert!(all.iter().all(|s| !is_canary(&s.session_key)), "canary sessions are never trained on");
        let trainable = scored.iter().filter(|s| !is_canary(&s.session_key)).count();
        assert!(trainable > RECENT_SESSIONS + REPLAY_SESSIONS);
        assert_eq!(all.len(), RECENT_SESSIONS + REPLAY_SESSIONS);
        let mut newest: Vec<i64> = scored.iter().filter(|s| !is_canary(&s.session_key)).map(|s| s.scored_ms).collect();
        newest.sort_unstable_by(|a, b| b.cmp(a));
        let cut = newest[RECENT_SESSIONS - 1];
        let old: Vec<&&ScoredSession> = all.iter().filter(|s| s.scored_ms < cut).collect();
        assert_eq!(old.len(), REPLAY_SESSIONS);
        assert!(old.iter().all(|s| s.score > 0.9), "the replay buffer holds the best older sessions");
        assert!(!valid.is_empty() && valid.len() < all.len() / 5);

        let (train, valid) = select_sessions(&scored, true);
        assert_eq!(train.len() + valid.len(), DRIFT_RECENT_SESSIONS + REPLAY_SESSIONS, "80% recent, 20% replay");
        let few: Vec<ScoredSession> = (0..12).map(|i| session(i, 0.5)).collect();
        let (train, valid) = select_sessions(&few, false);
        assert!(valid.is_empty(), "no validation split below {VALIDATION_FROM} sessions");
        assert_eq!(train.len(), few.iter().filter(|s| !is_canary(&s.session_key)).count());
    }
}
