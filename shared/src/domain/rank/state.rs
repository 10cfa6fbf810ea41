//! The predictor's earned influence (α), cold start and status line, derived
//! from the projection (comparison, model and drift events), never from a side file.
//!
//! The trainer records, with every comparison, the success-rate EMA after it,
//! whether cold start has been exited and how many sessions have passed since.
//! Serving reads the latest comparison: before exit α = 1 (pure baseline);
//! after it α = max(floor, 1 − success_rate) with the early-active floors of
//! seed 002 (0.8 for the first 10 sessions after exit, 0.6 up to 20, then 0).
//! A drift reset newer than the latest comparison puts α back to 1.

use rusqlite::OptionalExtension;

use crate::base::config::PredictorConfig;
use crate::base::error::{Result, SqlContext};
use crate::storage::store::Store;

/// Minimum scorer confidence for a session to count (seed 002 `minScorerConfidence`).
pub const MIN_SCORER_CONFIDENCE: f32 = 0.6;
/// Success rate the cold-start exit requires (strictly above).
pub const COLD_START_SUCCESS: f32 = 0.4;

/// What serving needs to know about the predictor.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictorState {
    /// Whether the predictor is enabled in the configuration.
    pub enabled: bool,
    /// Latest promoted model version, if any.
    pub model_version: Option<u64>,
    /// Checkpoint (blake3) of the latest promoted model.
    pub checkpoint: Option<String>,
    /// Scored sessions with confidence ≥ 0.6.
    pub scored_sessions: u64,
    /// Minimum scored sessions before the predictor may influence injection.
    pub min_sessions: u32,
    /// Success-rate EMA after the latest comparison (0.5 before any).
    pub success_rate: f32,
    /// Comparisons recorded.
    pub comparisons: u64,
    /// Cold start has been exited (and not reset by drift since).
    pub cold_start_exited: bool,
    /// Sessions since cold-start exit.
    pub sessions_after_cold_start: u32,
    /// A drift reset is newer than the latest comparison.
    pub drift_reset_pending: bool,
    /// The baseline weight to use now.
    pub alpha: f32,
}

/// The α floor of the early-active ramp.
pub fn alpha_floor(sessions_after_cold_start: u32) -> f32 {
    match sessions_after_cold_start {
        0..=10 => 0.8,
        11..=20 => 0.6,
        _ => 0.0,
    }
}

/// α from the cold-start state and the success rate.
pub fn alpha_for(cold_start_exited: bool, sessions_after_cold_start: u32, success_rate: f32) -> f32 {
    if !cold_start_exited {
        return 1.0;
    }
    alpha_floor(sessions_after_cold_start).max(1.0 - success_rate).clamp(0.0, 1.0)
}

impl PredictorState {
    /// Reads the state from the projection.
    pub fn load(store: &Store, config: &PredictorConfig) -> Result<PredictorState> {
        // Every ranking reads this: the statements come from the cache.
        let conn = store.conn();
        let model: Option<(i64, String)> = conn
            .prepare_cached("SELECT model_version, checkpoint FROM models ORDER BY model_version DESC LIMIT 1")
            .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .sql("read latest model")?;
        let scored: i64 = conn
            .prepare_cached("SELECT COUNT(DISTINCT session_key) FROM session_scores WHERE confidence >= ?1")
            .and_then(|mut s| s.query_row([MIN_SCORER_CONFIDENCE], |r| r.get(0)))
            .sql("count scored sessions")?;
        let latest: Option<(f32, bool, u32, i64)> = conn
            .prepare_cached(
                "SELECT success_rate, cold_start_exited, sessions_after_cold_start, created_ms
                 FROM predictor_comparisons ORDER BY created_ms DESC, id DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional())
            .sql("read latest comparison")?;
        let comparisons: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM predictor_comparisons")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .sql("count comparisons")?;
        let last_drift: Option<i64> = conn
            .prepare_cached("SELECT MAX(created_ms) FROM drift_resets")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .sql("read drift resets")?;
        let (success_rate, exited, after, at) = latest.unwrap_or((0.5, false, 0, i64::MIN));
        let drift_reset_pending = last_drift.is_some_and(|d| d >= at);
        let (exited, after) = if drift_reset_pending { (false, 0) } else { (exited, after) };
        let alpha = if config.enabled && model.is_some() { alpha_for(exited, after, success_rate) } else { 1.0 };
        Ok(PredictorState {
            enabled: config.enabled,
            model_version: model.as_ref().map(|(v, _)| *v as u64),
            checkpoint: model.map(|(_, c)| c),
            scored_sessions: scored as u64,
            min_sessions: config.min_training_sessions,
            success_rate: if drift_reset_pending { 0.5 } else { success_rate },
            comparisons: comparisons as u64,
            cold_start_exited: exited,
            sessions_after_cold_start: after,
            drift_reset_pending,
            alpha,
        })
    }

    /// Whether the predictor has no influence on what is injected.
    pub fn cold_start(&self) -> bool {
        self.alpha >= 1.0
    }

    /// The one-line status of seed 002 §4.7, for the session-start context.
    pub fn status_line(&self) -> String {
        if !self.enabled {
            return "[predictor: disabled | baseline only]".into();
        }
        if self.drift_reset_pending {
            return "[predictor: retraining | drift detected | baseline fallback]".into();
        }
        match self.model_version {
            None => format!(
                "[predictor: collecting | {}/{} sessions | baseline only]",
                self.scored_sessions.min(u64::from(self.min_sessions)),
                self.min_sessions
            ),
            Some(v) if !self.cold_start_exited => {
                format!("[predictor: warming | success_rate={:.2} | model_v{v} | baseline only]", self.success_rate)
            }
            Some(v) => format!(
                "[predictor: active | success_rate={:.2} | α={:.2} | model_v{v} | {} sessions]",
                self.success_rate, self.alpha, self.scored_sessions
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_floors_cap_influence() {
        assert_eq!(alpha_for(false, 0, 0.9), 1.0);
        assert_eq!(alpha_for(true, 5, 0.9), 0.8);
        assert_eq!(alpha_for(true, 15, 0.9), 0.6);
        assert!((alpha_for(true, 25, 0.9) - 0.1).abs() < 1e-6);
        assert!((alpha_for(true, 25, 0.3) - 0.7).abs() < 1e-6);
    }
}
