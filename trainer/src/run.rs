//! `engram-trainer run`: the cron entry point.
//!
//! Under the trainer lock (non-blocking: a second run exits at once), it
//! completes an interrupted promotion, scores every newly ended session
//! (`session.scored`), compares predictor and baseline on it
//! (`comparison.recorded`, carrying the success rate, α and the cold-start
//! state), records drift resets (`drift.reset`), and trains when enough new
//! sessions were scored since the last training run, when no model exists and
//! new data does, or after a drift reset. Every event it writes is stamped with
//! a strictly increasing time not earlier than the newest outcome event
//! already recorded, so "the latest comparison" is always well defined.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::OptionalExtension;
use shared::base::config::Config;
use shared::base::fsutil::FileLock;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::rank::state::MIN_SCORER_CONFIDENCE;
use shared::domain::training::data;
use shared::storage::event::{Body, ComparisonRecorded, DriftReset, Event, SessionScored};
use shared::storage::store::Store;

use crate::canary::is_canary;
use crate::compare::{self, Comparison};
use crate::continuity::{self, Assessment};
use crate::error::{Error, Result, Sql};
use crate::judge;
use crate::sessions;
use crate::tracker::{Observation, Step, Tracker, TrackerParams, outcome};
use crate::training::{self, TrainOutcome, TrainRequest};

/// Writer name stamped on the trainer's events.
pub const WRITER: &str = concat!("engram-trainer/", env!("CARGO_PKG_VERSION"));

/// Options of a run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The time to stamp events with (default: the clock).
    pub now: Option<Ts>,
    /// Train even if not due.
    pub force_train: bool,
    /// Weights to start the first model from.
    pub base_weights: Option<PathBuf>,
}

/// What a run did.
#[derive(Clone, Debug)]
pub enum RunOutcome {
    /// Another run holds the lock; nothing was done.
    Busy {
        /// The lock file.
        lock: PathBuf,
    },
    /// The run finished.
    Done(Box<RunSummary>),
}

/// Counts and state after a run, printed as one line.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Sessions scored.
    pub scored: u32,
    /// Sessions labelled again because content arrived after their labelling.
    pub relabelled: u32,
    /// Of which confident enough to count.
    pub confident: u32,
    /// Comparisons that updated the success rate.
    pub compared: u32,
    /// Of which the predictor won.
    pub wins: u32,
    /// Drift resets recorded.
    pub drift_resets: u32,
    /// The training run, if one ran.
    pub training: Option<TrainOutcome>,
    /// The tracker after the run.
    pub tracker: Tracker,
    /// α after the run.
    pub alpha: f32,
    /// Sessions scored in total (any confidence).
    pub total_scored: u64,
    /// The serving version after the run.
    pub model_version: Option<u64>,
    /// A promotion interrupted by a crash was completed.
    pub reconciled: Option<String>,
    /// Stopped early by a shutdown request.
    pub interrupted: bool,
    /// Sessions that could not be read (left pending).
    pub unreadable: u32,
    /// Why no training ran, when none did (e.g. "3 of 10 new labelled sessions").
    pub not_training: Option<String>,
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = format!(
            "success {:.2}, α {:.2}{}, model {}",
            self.tracker.success_rate,
            self.alpha,
            if self.tracker.cold_start_exited { "" } else { " (cold start)" },
            self.model_version.map_or("none".to_owned(), |v| format!("v{v}")),
        );
        let why_not = self.not_training.as_deref().map(|w| format!("; not training: {w}")).unwrap_or_default();
        if self.scored == 0
            && self.relabelled == 0
            && self.training.is_none()
            && self.unreadable == 0
            && self.reconciled.is_none()
        {
            if self.interrupted {
                return write!(f, "interrupted before any work: {} sessions scored; {state}", self.total_scored);
            }
            return write!(f, "nothing new: {} sessions scored{why_not}; {state}", self.total_scored);
        }
        write!(
            f,
            "scored {} sessions ({} confident, {} compared, predictor won {})",
            self.scored, self.confident, self.compared, self.wins
        )?;
        if self.relabelled > 0 {
            write!(f, "; {} labelled again (content arrived after their labelling)", self.relabelled)?;
        }
        if self.unreadable > 0 {
            write!(f, "; {} unreadable (left pending)", self.unreadable)?;
        }
        if self.reconciled.is_some() {
            write!(f, "; completed an interrupted promotion")?;
        }
        if self.drift_resets > 0 {
            write!(f, "; drift reset ×{}", self.drift_resets)?;
        }
        if let Some(t) = &self.training {
            let r = &t.run;
            let c = &r.canary;
            let n = |x: Option<f32>| x.map_or("-".to_owned(), |v| format!("{v:.3}"));
            write!(
                f,
                "; trained v{} on {} lists ({} epochs, {:.1} s, canary NDCG {} vs serving {} and baseline {})",
                r.model_version,
                r.sample_count,
                r.epochs,
                r.duration_ms as f64 / 1000.0,
                n(c.ndcg),
                n(c.serving_ndcg),
                n(c.baseline_ndcg)
            )?;
            if let Some(h) = &t.history {
                write!(f, "; {}", h.render())?;
            }
            match (&t.promoted, &r.failure) {
                (Some(p), _) => write!(f, ": promoted v{}", p.model_version)?,
                (None, Some(why)) => write!(
                    f,
                    ": gates failed ({why}); {} keeps serving",
                    t.serving_version.map_or("the baseline".to_owned(), |v| format!("v{v}"))
                )?,
                (None, None) => {}
            }
        }
        if self.interrupted {
            write!(f, "; interrupted")?;
        }
        write!(f, "{why_not}; {state}")
    }
}

/// Stamps events with strictly increasing times.
#[derive(Debug)]
struct Clock {
    fixed: Option<Ts>,
    last: i64,
}

impl Clock {
    fn next(&mut self) -> Ts {
        let now = self.fixed.unwrap_or_else(Ts::now).0;
        self.last = now.max(self.last + 1);
        Ts(self.last)
    }
}

fn latest_outcome_ms(store: &Store) -> Result<i64> {
    let v: Option<i64> = store
        .conn()
        .query_row(
            "SELECT MAX(t) FROM (
                SELECT MAX(created_ms) AS t FROM predictor_comparisons
                UNION ALL SELECT MAX(created_ms) FROM session_scores
                UNION ALL SELECT MAX(created_ms) FROM drift_resets
                UNION ALL SELECT MAX(created_ms) FROM predictor_training_log
                UNION ALL SELECT MAX(promoted_ms) FROM models)",
            [],
            |r| r.get(0),
        )
        .sql("read the latest outcome time")?;
    Ok(v.unwrap_or(i64::MIN / 2))
}

/// Rebuilds the tracker from the recorded comparisons (see [`crate::tracker`]).
pub fn load_tracker(store: &Store, params: &TrackerParams) -> Result<Tracker> {
    let conn = store.conn();
    let last_drift: Option<i64> =
        conn.query_row("SELECT MAX(created_ms) FROM drift_resets", [], |r| r.get(0)).sql("read drift resets")?;
    let latest: Option<(f64, bool, u32, i64)> = conn
        .query_row(
            "SELECT success_rate, cold_start_exited, sessions_after_cold_start, created_ms
             FROM predictor_comparisons ORDER BY created_ms DESC, id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .sql("read the latest comparison")?;
    let scored: i64 = conn
        .query_row(
            "SELECT COUNT(DISTINCT session_key) FROM session_scores WHERE confidence >= ?1",
            [f64::from(MIN_SCORER_CONFIDENCE)],
            |r| r.get(0),
        )
        .sql("count scored sessions")?;
    let trained: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM models)", [], |r| r.get(0)).sql("read models")?;
    let mut t = Tracker { scored_sessions: scored.max(0) as u64, trained, ..Tracker::default() };
    let Some((s, exited, after, at)) = latest else { return Ok(t) };
    if last_drift.is_some_and(|d| d >= at) {
        return Ok(t);
    }
    t.success_rate = s as f32;
    t.cold_start_exited = exited;
    t.sessions_after_cold_start = after;
    let since = last_drift.unwrap_or(i64::MIN);
    let mut stmt = conn
        .prepare_cached(
            "SELECT success_rate, margin FROM predictor_comparisons
             WHERE ema_updated = 1 AND created_ms > ?1 ORDER BY created_ms DESC, id DESC LIMIT ?2",
        )
        .sql("read recent comparisons")?;
    let limit = i64::from(params.drift_window.max(1)).max(crate::tracker::EXIT_WINDOW as i64);
    let rows: Vec<(f64, f64)> = stmt
        .query_map(rusqlite::params![since, limit], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
        .sql("read recent comparisons")?;
    t.low_streak =
        u32::try_from(rows.iter().take_while(|(s, _)| (*s as f32) < crate::tracker::DRIFT_THRESHOLD).count())
            .unwrap_or(u32::MAX);
    t.recent = rows.iter().take(crate::tracker::EXIT_WINDOW).rev().map(|(_, m)| outcome(*m as f32)).collect();
    Ok(t)
}

/// The `session.scored` body of an assessment.
pub fn scored_event(a: &Assessment, content_events: u64) -> SessionScored {
    SessionScored {
        content_events: Some(content_events),
        score: a.score,
        confidence: a.confidence,
        memories_recalled: a.memories_recalled,
        memories_used: a.memories_used,
        novel_context_count: a.novel_context_count,
        relevance: a.relevance.clone(),
        labels: a.labels.clone(),
        reasoning: a.reasoning.clone(),
        scorer: a.scorer.clone(),
    }
}

/// The `comparison.recorded` body of a session.
pub fn comparison_event(
    id: String,
    c: &Comparison,
    a: &Assessment,
    step: &Step,
    project: Option<String>,
) -> ComparisonRecorded {
    ComparisonRecorded {
        comparison_id: id,
        predictor_ndcg: c.predictor_ndcg,
        baseline_ndcg: c.baseline_ndcg,
        predictor_won: if step.ema_updated { c.margin.map(|m| m > crate::tracker::TIE_EPSILON) } else { None },
        margin: c.margin.unwrap_or(0.0),
        scorer_confidence: a.confidence,
        ema_updated: step.ema_updated,
        success_rate: step.success_rate,
        alpha: step.alpha,
        predictor_top_ids: c.predictor_top_ids.clone(),
        baseline_top_ids: c.baseline_top_ids.clone(),
        relevance_scores: c.relevance_scores.clone(),
        fts_overlap_score: a.fts_overlap,
        project,
        candidate_count: c.candidate_count,
        sessions_after_cold_start: step.sessions_after_cold_start,
        cold_start_exited: step.cold_start_exited,
    }
}

/// Why training is due now (`Ok`), or why it is not (`Err`, in words for
/// the run's summary: what is missing and how much of it there is).
fn training_due(
    store: &Store,
    config: &Config,
    force: bool,
    drift: bool,
) -> Result<std::result::Result<&'static str, String>> {
    if drift {
        return Ok(Ok("drift reset"));
    }
    let conn = store.conn();
    let last_run: Option<i64> = conn
        .query_row("SELECT MAX(created_ms) FROM predictor_training_log", [], |r| r.get(0))
        .sql("read the last training run")?;
    let last_drift: Option<i64> =
        conn.query_row("SELECT MAX(created_ms) FROM drift_resets", [], |r| r.get(0)).sql("read drift resets")?;
    if last_drift.is_some_and(|d| last_run.is_none_or(|r| d > r)) {
        return Ok(Ok("drift reset without a retrain yet"));
    }
    if force {
        return Ok(Ok("forced"));
    }
    let trainable: Vec<_> = data::scored_sessions(store, MIN_SCORER_CONFIDENCE)?
        .into_iter()
        .filter(|s| !is_canary(&s.session_key))
        .collect();
    let new = trainable.iter().filter(|s| last_run.is_none_or(|r| s.scored_ms > r)).count();
    let interval = config.predictor.train_interval_sessions.max(1) as usize;
    if new >= interval {
        return Ok(Ok("new sessions"));
    }
    let has_model: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM models)", [], |r| r.get(0)).sql("read models")?;
    let first = interval.min(config.predictor.min_training_sessions.max(1) as usize);
    if !has_model && new > 0 && trainable.len() >= first {
        return Ok(Ok("no model yet"));
    }
    let history = history_counts(store)?;
    if !has_model && last_run.is_none_or(|r| history.replayed_ms > r) && history.enough() {
        return Ok(Ok("no model yet, and the replayed history has enough labelled lists"));
    }
    let mut why = not_due_reason(store, has_model, new, interval, trainable.len(), first, history.sessions > 0)?;
    if !has_model && history.sessions > 0 {
        why.push_str(&format!("; {}", history.why_not()));
    }
    Ok(Err(why))
}

/// Labelled replayed lists (see [`crate::history`]).
struct HistoryCounts {
    /// Replayed sessions.
    sessions: usize,
    /// Lists of the earlier sessions (trained on).
    train: usize,
    /// Lists of the later sessions (held out).
    held: usize,
    /// The latest replayed session's event time.
    replayed_ms: i64,
}

impl HistoryCounts {
    fn enough(&self) -> bool {
        self.train >= crate::history::MIN_TRAIN_LISTS && self.held >= crate::canary::MIN_LISTS
    }

    fn why_not(&self) -> String {
        format!(
            "the replayed history of {} session(s) gives {} labelled list(s) to train on (need {}) and {} held out to evaluate on (need {})",
            self.sessions,
            self.train,
            crate::history::MIN_TRAIN_LISTS,
            self.held,
            crate::canary::MIN_LISTS
        )
    }
}

fn history_counts(store: &Store) -> Result<HistoryCounts> {
    let stored = shared::domain::training::history::stored_lists(store)?;
    let held = crate::history::held_out_sessions(&stored);
    let n_held = stored.iter().filter(|l| held.contains(&l.session_key)).count();
    let (sessions, replayed_ms): (i64, Option<i64>) = store
        .conn()
        .query_row("SELECT COUNT(*), MAX(started_ms) FROM replayed_sessions", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .sql("count replayed sessions")?;
    Ok(HistoryCounts {
        sessions: sessions.max(0) as usize,
        train: stored.len() - n_held,
        held: n_held,
        replayed_ms: replayed_ms.unwrap_or(i64::MIN),
    })
}

/// Why training is not due, in words: how many labelled sessions there are
/// against how many are needed, and why sessions that ended are not labelled.
fn not_due_reason(
    store: &Store,
    has_model: bool,
    new: usize,
    interval: usize,
    trainable: usize,
    first: usize,
    replayed: bool,
) -> Result<String> {
    let mut why = if has_model {
        format!("{new} of {interval} new labelled sessions since the last training run")
    } else {
        format!("{trainable} of {first} labelled sessions needed for a first model")
    };
    let conn = store.conn();
    let unserved: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sessions s WHERE s.ended_ms IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM rankings r WHERE r.session_key = s.session_key)",
            [],
            |r| r.get(0),
        )
        .sql("count ended sessions without rankings")?;
    if unserved > 0 {
        why.push_str(&format!(
            "; {unserved} ended session{} had no memories served (no hooks installed while they ran), \
             so {}",
            if unserved == 1 { "" } else { "s" },
            if replayed {
                "they are learned from only as replayed history"
            } else {
                "there is nothing to label in them (`engram-trainer history` replays them)"
            }
        ));
    }
    let scored: i64 = conn
        .query_row("SELECT COUNT(DISTINCT session_key) FROM session_scores", [], |r| r.get(0))
        .sql("count scored sessions")?;
    let unusable = (scored.max(0) as usize).saturating_sub(trainable);
    if unusable > 0 {
        why.push_str(&format!(
            "; {unusable} labelled session{} held out for the canary or scored below confidence {MIN_SCORER_CONFIDENCE}",
            if unusable == 1 { " is" } else { "s are" }
        ));
    }
    Ok(why)
}

/// Scores, compares and trains (see the module docs).
pub fn run(paths: &Paths, config: &Config, opts: &RunOptions, shutdown: &Shutdown) -> Result<RunOutcome> {
    std::fs::create_dir_all(paths.home()).map_err(|e| Error::io("create directory", paths.home(), e))?;
    let lock_path = paths.trainer_lock();
    let Some(_lock) = FileLock::try_exclusive(&lock_path).map_err(|e| Error::io("lock", &lock_path, e))? else {
        return Ok(RunOutcome::Busy { lock: lock_path });
    };
    let mut journal = shared::projection::open(paths, WRITER)?;
    let mut summary = RunSummary { reconciled: training::reconcile(paths, journal.store())?, ..RunSummary::default() };
    if let Err(e) = training::prune(paths, journal.store()) {
        tracing::warn!(error = %e, "could not clean the models directory");
    }
    let params = TrackerParams {
        min_training_sessions: config.predictor.min_training_sessions,
        drift_window: config.predictor.drift_reset_window,
    };
    let mut tracker = load_tracker(journal.store(), &params)?;
    let mut clock = Clock { fixed: opts.now, last: latest_outcome_ms(journal.store())? };

    for pending in sessions::pending(journal.store())? {
        if shutdown.requested() {
            summary.interrupted = true;
            break;
        }
        let (record, content_events) = match sessions::load(&journal, &pending) {
            Ok(l) => (l.record, l.content_events),
            Err(e) => {
                // Left pending: the next run tries again; one bad session never blocks the others.
                tracing::error!(session = %pending.session_key, error = %e, "cannot read the session; skipped");
                summary.unreadable += 1;
                continue;
            }
        };
        let evidence = continuity::gather(&record);
        let verdict = if config.judge.enabled() && evidence.memories.values().any(|m| m.injected.is_some()) {
            let injected: Vec<_> =
                evidence.memories.iter().filter(|(_, m)| m.injected.is_some()).map(|(id, _)| id.clone()).collect();
            match judge::run(&config.judge, &judge::request(&record), &injected) {
                Ok(v) => Some(v),
                Err(why) => {
                    tracing::warn!(session = %pending.session_key, %why, "judge gave no verdict; using the deterministic score");
                    None
                }
            }
        } else {
            None
        };
        let assessment = continuity::assess(&record, &evidence, verdict.as_ref());
        let session = Some(pending.session_key.clone());
        let scored = journal.event(
            clock.next(),
            session.clone(),
            Body::SessionScored(scored_event(&assessment, content_events)),
        );
        if pending.relabel {
            // Content arrived after the session was labelled: its labels are
            // made again from all of it. Its comparison already moved the
            // success rate once; a session never counts twice there.
            journal.append(std::slice::from_ref(&scored))?;
            summary.relabelled += 1;
            tracing::info!(
                session = %pending.session_key,
                score = assessment.score,
                confidence = assessment.confidence,
                content_events,
                "labelled again: content arrived after its last labelling"
            );
            continue;
        }
        let comparison = compare::compare(&record.rankings, &assessment.labels);
        let step =
            tracker.observe(Observation { confidence: assessment.confidence, margin: comparison.margin }, &params);
        let compared_at = clock.next();
        let mut events: Vec<Event> = vec![
            scored,
            journal.event(
                compared_at,
                session.clone(),
                Body::ComparisonRecorded(comparison_event(
                    shared::base::ids::generate_with_prefix("cmp", compared_at),
                    &comparison,
                    &assessment,
                    &step,
                    record.project.clone(),
                )),
            ),
        ];
        if step.drift {
            tracing::warn!(success_rate = step.success_rate, window = params.drift_window, "predictor drift detected");
            events.push(journal.event(
                clock.next(),
                None,
                Body::DriftReset(DriftReset { success_rate: step.success_rate, window: params.drift_window }),
            ));
            summary.drift_resets += 1;
        }
        journal.append(&events)?;
        summary.scored += 1;
        summary.confident += u32::from(assessment.confidence >= MIN_SCORER_CONFIDENCE);
        if step.ema_updated {
            summary.compared += 1;
            summary.wins += u32::from(step.outcome == Some(1.0));
        }
        tracing::info!(
            session = %pending.session_key,
            score = assessment.score,
            confidence = assessment.confidence,
            margin = ?comparison.margin,
            success_rate = step.success_rate,
            alpha = step.alpha,
            "scored"
        );
    }

    let due = if shutdown.requested() {
        Err("interrupted".to_owned())
    } else {
        training_due(journal.store(), config, opts.force_train, summary.drift_resets > 0)?
    };
    if let Err(why) = &due
        && !shutdown.requested()
    {
        tracing::info!(reason = %why, "not training");
        summary.not_training = Some(why.clone());
    }
    if let Ok(why) = due {
        let drift = why.starts_with("drift");
        tracing::info!(reason = why, "training");
        let req = TrainRequest {
            now: clock.next(),
            drift,
            base_weights: opts.base_weights.as_deref(),
            budget: Duration::from_secs(config.predictor.max_training_seconds.max(1)),
            shutdown,
        };
        summary.training = Some(training::train_and_gate(&mut journal, config, &req)?);
    }
    summary.interrupted |= shutdown.requested();
    summary.tracker = tracker;
    let state = shared::domain::rank::state::PredictorState::load(journal.store(), &config.predictor)?;
    summary.alpha = state.alpha;
    let total: i64 = journal
        .store()
        .conn()
        .query_row("SELECT COUNT(DISTINCT session_key) FROM session_scores", [], |r| r.get(0))
        .sql("count scored sessions")?;
    summary.total_scored = total.max(0) as u64;
    summary.model_version = state.model_version;
    Ok(RunOutcome::Done(Box::new(summary)))
}
