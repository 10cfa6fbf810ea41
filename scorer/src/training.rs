//! Training off the serving path: `train` and `train_from_db` run in order on
//! one thread, on a *clone* of the serving weights, and publish the result by
//! swapping the slot's `Arc` (see [`crate::serving`]). Scoring never waits.
//!
//! `train_from_db` then applies the trainer's validation gates on a held-out
//! canary split (Signet's: the 10 newest sessions, or every session when
//! there are 10 or fewer): the last epoch's loss is finite, the canary score
//! variance is above zero and, when trained weights were serving, the canary
//! NDCG@10 is not lower than theirs by more than 0.15 and (when they are
//! Engram's: the top 5 of another architecture says nothing about forgetting)
//! the canary top-5 overlap with them is at least 60%. Weights that fail a
//! gate are discarded: the old ones keep serving and no checkpoint is written
//! (the peer serves them anyway). A run stops early at shutdown or when it
//! exceeds its time budget (25 s by default, inside the daemon's 30 s RPC
//! timeout); the epochs done so far are kept and gated.
//!
//! **Counters mean what Signet's mean.** `step` is the optimizer steps taken
//! in this process, one per list (batches of one list, as Signet's); status's
//! `training_pairs` is the sessions trained on in this process (for `train`,
//! the labels, as Signet counts them); `loss` is the mean over the last
//! epoch's lists of `KL(softmax(labels/T) ‖ softmax(logits/T))` in nats, at
//! the request's temperature (default 0.5), each list weighted by its
//! scorer's confidence. Signet's SGPT weights never train here: training
//! starts from fresh Engram weights and replaces them only through the gates.

pub use shared::base::logging::panic_message;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use predictor::metrics::ndcg_at_k;
use predictor::model::Model;
use predictor::train::{AdamParams, AdamState, Averaging, Sample, TrainConfig, clip_gradients};
use shared::base::paths::Paths;
use shared::base::rpc::{Id, encode_error, encode_result};
use shared::base::time::Ts;

use crate::error::{Error, Result};
use crate::protocol::{TrainFromDbParams, TrainFromDbResult, TrainParams, TrainResult};
use crate::serving::{Origin, Serving, Slot, Weights, destination, save};
use crate::signet::{List, SignetInputs, order_desc, signet_logits, softmax, softmax64};

/// Sessions held out as the canary (Signet's choice).
pub const CANARY_SESSIONS: usize = 10;
/// Minimum canary top-5 overlap with the serving weights.
pub const MIN_TOP5_OVERLAP: f64 = 0.6;
/// Largest canary NDCG@10 drop allowed against the serving weights.
pub const MAX_NDCG_DROP: f64 = 0.15;
/// Gradient norm clip of a single `train` step.
const CLIP_NORM: f32 = 5.0;

/// What the training thread needs.
#[derive(Debug, Clone)]
pub struct TrainingContext {
    /// The data home, if any (checkpoints may be written in its models directory).
    pub home: Option<Paths>,
    /// The serving weights.
    pub slot: Arc<Slot>,
    /// Where responses go.
    pub out: Sender<Vec<u8>>,
    /// The protocol's embedding size (`--native-dim`).
    pub native_dim: usize,
    /// Longest a `train_from_db` run may take.
    pub budget: Duration,
    /// Time zone for session signals.
    pub tz: jiff::tz::TimeZone,
    /// Set at shutdown: the job in hand stops, queued ones are refused.
    pub cancel: Arc<AtomicBool>,
    /// A job is running.
    pub busy: Arc<AtomicBool>,
    /// Optimizer steps taken in this process.
    pub steps: Arc<AtomicU64>,
    /// Sessions (for `train`, labels) trained on in this process.
    pub pairs: Arc<AtomicU64>,
}

/// A queued training request.
#[derive(Debug)]
pub enum Job {
    /// `train`.
    Train {
        /// Request id.
        id: Id,
        /// Params.
        params: TrainParams,
    },
    /// `train_from_db`.
    TrainFromDb {
        /// Request id.
        id: Id,
        /// Params.
        params: TrainFromDbParams,
    },
}

/// The training thread.
#[derive(Debug)]
pub struct Trainer {
    tx: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
    ctx: TrainingContext,
}

impl Trainer {
    /// Starts the thread.
    pub fn spawn(ctx: TrainingContext) -> Trainer {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread_ctx = ctx.clone();
        let handle = std::thread::Builder::new()
            .name("scorer-train".into())
            .spawn(move || {
                for job in rx {
                    thread_ctx.busy.store(true, Ordering::SeqCst);
                    let line = run_job(&thread_ctx, job);
                    thread_ctx.busy.store(false, Ordering::SeqCst);
                    if thread_ctx.out.send(line).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the training thread");
        Trainer { tx: Some(tx), handle: Some(handle), ctx }
    }

    /// Queues a job; gives it back if the thread is gone.
    pub fn submit(&self, job: Job) -> std::result::Result<(), Box<Job>> {
        match &self.tx {
            Some(tx) => tx.send(job).map_err(|e| Box::new(e.0)),
            None => Err(Box::new(job)),
        }
    }

    /// A job is running.
    pub fn busy(&self) -> bool {
        self.ctx.busy.load(Ordering::SeqCst)
    }

    /// Sessions (for `train`, labels) trained on in this process (status's `training_pairs`).
    pub fn pairs(&self) -> u64 {
        self.ctx.pairs.load(Ordering::SeqCst)
    }

    /// Stops the job in hand at its next check and refuses queued ones.
    pub fn cancel(&self) {
        self.ctx.cancel.store(true, Ordering::SeqCst);
    }

    /// Lets queued jobs finish (cancelling them if `stop` turns true meanwhile), then joins.
    pub fn finish(mut self, stop: &dyn Fn() -> bool) {
        self.tx = None;
        if let Some(handle) = self.handle.take() {
            while !handle.is_finished() {
                if stop() {
                    self.cancel();
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if handle.join().is_err() {
                tracing::error!("the training thread panicked");
            }
        }
    }
}

fn run_job(ctx: &TrainingContext, job: Job) -> Vec<u8> {
    let (id, result) = match job {
        Job::Train { id, params } => {
            let r = guarded(|| train(ctx, params)).map(|r| encode_result(&id, &r));
            (id, r)
        }
        Job::TrainFromDb { id, params } => {
            let span = tracing::info_span!("train_from_db", db = %params.db_path).entered();
            let r = guarded(|| train_from_db(ctx, params)).map(|r| encode_result(&id, &r));
            drop(span);
            (id, r)
        }
    };
    match result {
        Ok(line) => line,
        Err(e) => {
            tracing::warn!(%id, error = %e, "training request failed");
            encode_error(&id, &e.to_rpc())
        }
    }
}

/// Runs `f`, turning a panic into [`Error::Panicked`].
pub fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(Error::Panicked(panic_message(payload.as_ref()))),
    }
}

/// The weights training starts from, and Engram's model in them: the
/// serving ones when they are Engram's and fit the protocol's embedding
/// size, else fresh ones (with their lineage reset).
fn starting_point(ctx: &TrainingContext, serving: &Serving) -> Result<(Serving, Model)> {
    match &serving.weights {
        Weights::Engram(m) if m.config().native_dim == ctx.native_dim => Ok((serving.clone(), m.clone())),
        Weights::Engram(m) => {
            tracing::info!(
                serving = m.config().native_dim,
                native_dim = ctx.native_dim,
                "the serving weights use another embedding size; training fresh weights"
            );
            fresh_start(ctx)
        }
        Weights::Signet(_) => {
            tracing::info!("Signet's SGPT weights are serving; training fresh Engram weights to replace them");
            fresh_start(ctx)
        }
    }
}

/// The ListNet temperatures a client may ask for: divided into every logit,
/// a smaller one overflowed (1e-300 became 0 as an f32).
pub const TEMPERATURES: std::ops::RangeInclusive<f64> = 1e-3..=1e3;

fn fresh_start(ctx: &TrainingContext) -> Result<(Serving, Model)> {
    let fresh = Serving::fresh(ctx.native_dim)?;
    let model = fresh.engram().cloned().unwrap_or_else(|| unreachable!("fresh weights are Engram's"));
    Ok((fresh, model))
}

fn temperature(t: Option<f64>) -> Result<f32> {
    let t = t.unwrap_or(0.5);
    if !TEMPERATURES.contains(&t) {
        return Err(Error::params(
            "temperature",
            format!("must be between {:e} and {:e}, got {t:e}", TEMPERATURES.start(), TEMPERATURES.end()),
        ));
    }
    Ok(t as f32)
}

/// `train`: one listwise Adam step on one list, published at once.
pub fn train(ctx: &TrainingContext, p: TrainParams) -> Result<TrainResult> {
    if ctx.cancel.load(Ordering::SeqCst) {
        return Err(Error::Cancelled);
    }
    let n = p.candidate_embeddings.len();
    if n == 0 {
        return Err(Error::params("candidate_embeddings", "cannot train on an empty list"));
    }
    if p.labels.len() != n {
        return Err(Error::params("labels", format!("{} labels for {n} candidates", p.labels.len())));
    }
    if let Some(i) = p.labels.iter().position(|l| !l.is_finite() || l.abs() > crate::signet::MAX_INPUT) {
        return Err(Error::params(
            format!("labels[{i}]"),
            format!("not a finite number of magnitude at most {:e}", crate::signet::MAX_INPUT),
        ));
    }
    let t = temperature(p.temperature)?;
    let serving = ctx.slot.load();
    if matches!(serving.weights, Weights::Signet(_)) {
        return Err(Error::Refused(
            "Signet's SGPT weights are serving and are not trained here: one step from fresh weights \
             would replace them; use train_from_db, whose gates decide the switch"
                .into(),
        ));
    }
    let (mut next, mut model) = starting_point(ctx, &serving)?;
    let list = List::build(
        &model,
        ctx.native_dim,
        SignetInputs {
            context_embedding: p.context_embedding,
            context_text: p.context_text,
            n,
            embeddings: p.candidate_embeddings,
            texts: p.candidate_texts.unwrap_or_default(),
            features: p.candidate_features.unwrap_or_default(),
            project_slot: p.project_slot.unwrap_or(0),
        },
        Ts::now(),
        &ctx.tz,
    )?;
    let (loss, mut grads) = model.loss_and_gradients(&list.query(), &list.candidates(), &p.labels, t, 1.0)?;
    let norm = clip_gradients(&mut grads, CLIP_NORM);
    if loss.is_finite() && norm.is_finite() {
        let opt = next.optimizer.get_or_insert_with(|| AdamState::new(&model));
        opt.apply(&mut model, &grads, &AdamParams::default());
        next.weights = Weights::Engram(model);
        let step = ctx.steps.fetch_add(1, Ordering::SeqCst) + 1;
        ctx.pairs.fetch_add(p.labels.len() as u64, Ordering::SeqCst);
        next.version += 1;
        next.trained = true;
        next.trained_lists += 1;
        next.steps += 1;
        next.last_trained_ms = Some(Ts::now().millis());
        next.origin = Origin::Trained;
        if ctx.slot.publish_if(serving.generation, next).is_err() {
            tracing::warn!("new weights arrived during the step; the step is discarded");
        }
        Ok(TrainResult { loss: f64::from(loss), step })
    } else {
        tracing::warn!(loss, "the loss is not finite: no step taken");
        Ok(TrainResult { loss: f64::from(loss), step: ctx.steps.load(Ordering::SeqCst) })
    }
}

/// Canary metrics of one model.
struct CanaryScores {
    /// Softmax scores per list.
    probs: Vec<Vec<f64>>,
}

fn canary_scores(model: &Model, canary: &[Sample]) -> Result<CanaryScores> {
    let mut probs = Vec::with_capacity(canary.len());
    for s in canary {
        let cands: Vec<_> = s.candidates.iter().map(predictor::model::OwnedCandidate::as_candidate).collect();
        probs.push(softmax(&model.score(&s.query.as_query(), &cands)?));
    }
    Ok(CanaryScores { probs })
}

/// Canary scores of the serving weights, in their own architecture.
fn serving_canary_scores(
    weights: &Weights,
    native_dim: usize,
    canary: &[Sample],
    inputs: &[SignetInputs],
) -> Result<CanaryScores> {
    match weights {
        Weights::Engram(model) => canary_scores(model, canary),
        Weights::Signet(model) => {
            let probs = inputs
                .iter()
                .map(|i| signet_logits(model, native_dim, i).map(|z| softmax64(&z)))
                .collect::<Result<Vec<_>>>()?;
            Ok(CanaryScores { probs })
        }
    }
}

fn top5_overlap(before: &CanaryScores, after: &CanaryScores) -> f64 {
    let mut sum = 0.0;
    let mut count = 0usize;
    for (a, b) in before.probs.iter().zip(&after.probs) {
        let k = a.len().min(5);
        if k == 0 {
            continue;
        }
        let ta: Vec<usize> = order_desc(a).into_iter().take(k).collect();
        let tb: Vec<usize> = order_desc(b).into_iter().take(k).collect();
        sum += ta.iter().filter(|i| tb.contains(i)).count() as f64 / k as f64;
        count += 1;
    }
    if count == 0 { 1.0 } else { sum / count as f64 }
}

fn pooled_variance(scores: &CanaryScores) -> f64 {
    let all: Vec<f64> = scores.probs.iter().flatten().copied().collect();
    if all.is_empty() {
        return 0.0;
    }
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / all.len() as f64
}

fn mean_ndcg(scores: &CanaryScores, canary: &[Sample]) -> Option<f64> {
    let mut sum = 0.0;
    let mut count = 0usize;
    for (p, s) in scores.probs.iter().zip(canary) {
        if s.labels.iter().any(|&l| l > 0.0) {
            sum += f64::from(ndcg_at_k(&order_desc(p), &s.labels, 10));
            count += 1;
        }
    }
    (count > 0).then(|| sum / count as f64)
}

/// `train_from_db` (see the module documentation).
pub fn train_from_db(ctx: &TrainingContext, p: TrainFromDbParams) -> Result<TrainFromDbResult> {
    let started = Instant::now();
    if ctx.cancel.load(Ordering::SeqCst) {
        return Err(Error::Cancelled);
    }
    let t = temperature(p.temperature)?;
    let min_confidence = p.min_confidence.unwrap_or(0.6);
    if !min_confidence.is_finite() {
        return Err(Error::params("min_confidence", "must be a finite number"));
    }
    let epochs = usize::try_from(p.epochs.unwrap_or(3)).unwrap_or(usize::MAX).min(1000);
    let limit = p.limit.unwrap_or(5000);
    let serving = ctx.slot.load();
    let (mut next, mut model) = starting_point(ctx, &serving)?;
    // Gates against the serving weights apply when they are trained ones.
    let before_trained = serving.trained;
    let same_architecture = serving.engram().is_some();
    let lists = crate::db::read_lists(Path::new(&p.db_path), &model, ctx.native_dim, limit, min_confidence, &ctx.tz)?;
    let mut samples = lists.samples;
    let mut inputs = lists.inputs;
    let (canary, train): (Vec<Sample>, Vec<Sample>) = if samples.len() <= CANARY_SESSIONS {
        (samples.clone(), samples)
    } else {
        let rest = samples.split_off(CANARY_SESSIONS);
        inputs.truncate(CANARY_SESSIONS);
        (samples, rest)
    };
    let mut result = TrainFromDbResult {
        loss: 0.0,
        step: ctx.steps.load(Ordering::SeqCst),
        samples_used: train.len() as u64,
        samples_skipped: lists.skipped,
        duration_ms: 0,
        canary_score_variance: 0.0,
        canary_topk_stability: 1.0,
        checkpoint_saved: false,
        gates_passed: false,
        published: false,
        failure: None,
        canary_sessions: canary.len() as u64,
        canary_ndcg: None,
        canary_ndcg_before: None,
        model_version: serving.version,
        checkpoint_file: None,
    };
    if train.is_empty() {
        result.failure = Some("no qualifying session with candidates".into());
        result.duration_ms = started.elapsed().as_millis() as u64;
        return Ok(result);
    }
    let before = serving_canary_scores(&serving.weights, ctx.native_dim, &canary, &inputs)?;
    let mut opt = next.optimizer.take().unwrap_or_else(|| AdamState::new(&model));
    // Signet's schedule: one list per step (so `step` counts what Signet's
    // counts), one temperature for every list, the last epoch's weights (this
    // path has no validation split to show that a mean of epochs is better).
    let cfg = TrainConfig {
        epochs,
        batch_size: 1,
        temperature: t,
        low_spread_temperature: t,
        seed: 0x5eed,
        averaging: Averaging::Off,
        ..TrainConfig::default()
    };
    let budget = ctx.budget;
    let cancel = Arc::clone(&ctx.cancel);
    let report = predictor::train::train(&mut model, &mut opt, &train, &[], &cfg, &mut || {
        cancel.load(Ordering::SeqCst) || started.elapsed() > budget
    })?;
    if ctx.cancel.load(Ordering::SeqCst) {
        return Err(Error::Cancelled);
    }
    result.step = ctx.steps.fetch_add(report.steps, Ordering::SeqCst) + report.steps;
    if report.steps > 0 {
        ctx.pairs.fetch_add(train.len() as u64, Ordering::SeqCst);
    }
    result.loss = report.epochs.last().map_or(0.0, |e| f64::from(e.train_loss));
    let after = canary_scores(&model, &canary)?;
    result.canary_score_variance = pooled_variance(&after);
    result.canary_topk_stability = top5_overlap(&before, &after);
    result.canary_ndcg = mean_ndcg(&after, &canary);
    result.canary_ndcg_before = mean_ndcg(&before, &canary);

    let mut failures = Vec::new();
    if report.steps == 0 {
        failures.push(format!("no training step was taken ({:?})", report.stop));
    }
    if !result.loss.is_finite() {
        failures.push("the training loss is not finite".to_owned());
    }
    if result.canary_score_variance.is_nan() || result.canary_score_variance <= 0.0 {
        failures.push("the canary score variance is 0".to_owned());
    }
    if before_trained {
        if same_architecture && result.canary_topk_stability < MIN_TOP5_OVERLAP {
            failures.push(format!(
                "canary top-5 overlap with the serving weights is {:.2}, below {MIN_TOP5_OVERLAP}",
                result.canary_topk_stability
            ));
        }
        if let (Some(a), Some(b)) = (result.canary_ndcg, result.canary_ndcg_before)
            && a < b - MAX_NDCG_DROP
        {
            failures.push(format!("canary NDCG@10 fell from {b:.3} to {a:.3}"));
        }
    }
    result.gates_passed = failures.is_empty();
    if !result.gates_passed {
        let why = failures.join("; ");
        tracing::warn!(failure = %why, "the new weights failed a gate; the serving weights stay");
        result.failure = Some(why);
        result.duration_ms = started.elapsed().as_millis() as u64;
        return Ok(result);
    }
    next.weights = Weights::Engram(model);
    next.optimizer = Some(opt);
    next.version = serving.version + 1;
    next.trained = true;
    next.trained_lists += report.trained_lists;
    next.steps += report.steps;
    next.last_trained_ms = Some(Ts::now().millis());
    next.origin = Origin::Trained;
    match ctx.slot.publish_if(serving.generation, next) {
        Ok(published) => {
            result.published = true;
            result.model_version = published.version;
            tracing::info!(version = published.version, steps = report.steps, "published newly trained weights");
            if let Some(path) = p.checkpoint_path.as_deref() {
                let written = destination(path, ctx.home.as_ref())
                    .map_err(|why| Error::params("checkpoint_path", why))
                    .and_then(|to| to.prepare().and_then(|()| save(&published, &to.path, FINE_TUNED)));
                match written {
                    Ok(saved) => {
                        result.checkpoint_saved = true;
                        result.checkpoint_file = Some(saved.path.display().to_string());
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "could not write the checkpoint");
                        result.failure = Some(format!("checkpoint not written: {e}"));
                    }
                }
            }
        }
        Err(_) => {
            result.failure = Some("other weights were promoted during training; these are discarded".into());
        }
    }
    result.duration_ms = started.elapsed().as_millis() as u64;
    Ok(result)
}

/// Signet's flags word of weights fine-tuned on the user's data (bit 1).
const FINE_TUNED: u32 = 2;
