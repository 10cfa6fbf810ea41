//! α bookkeeping: how a comparison updates the success rate, cold start, the
//! early-active ramp and drift detection. Pure: a [`Tracker`] state and one
//! [`Observation`] per scored session in, one [`Step`] out.
//!
//! * **Success rate**: an EMA (factor 0.1, start 0.5) of the predictor's wins
//!   (1 win, ½ tie, 0 loss), updated only by sessions with scorer confidence
//!   ≥ 0.6 whose rankings the predictor had scored and whose labelled pool had
//!   something relevant to rank (otherwise NDCG says nothing).
//! * **Cold start** is exited, once, when all hold: a model was promoted; at
//!   least `min_training_sessions` sessions were scored with confidence ≥ 0.6;
//!   the success rate is above 0.4; and the win rate over the last 10
//!   EMA-updating comparisons (there must be 10) is above 0.4, so the starting
//!   0.5 alone never lets a model out.
//! * **α** = 1 in cold start, else `max(floor, 1 − success rate)` with the
//!   floors of the early-active ramp (0.8 for sessions 1–10 after the exit,
//!   0.6 for 11–20): [`shared::domain::rank::state::alpha_for`].
//! * **Drift**: after `drift_reset_window` consecutive EMA-updating
//!   comparisons with a success rate below 0.3 (only once a model exists),
//!   the step carries a drift reset: α returns to 1 (cold start is re-entered
//!   and must be exited again), the EMA restarts at 0.5, and a retrain with a
//!   replay buffer follows. Comparisons that do not update the EMA neither
//!   extend nor break the streak, so drift cannot fire on every session.

use std::collections::VecDeque;

use shared::domain::rank::state::{COLD_START_SUCCESS, MIN_SCORER_CONFIDENCE, alpha_for};

/// EMA factor of the success rate (seed 002 `emaAlpha`).
pub const EMA: f32 = 0.1;
/// Success rate below which sessions count towards drift (seed 002 `driftResetThreshold`).
pub const DRIFT_THRESHOLD: f32 = 0.3;
/// EMA-updating comparisons whose win rate the cold-start exit also requires.
pub const EXIT_WINDOW: usize = 10;
/// Success rate before any comparison.
pub const INITIAL_SUCCESS: f32 = 0.5;
/// |margin| at or below which a comparison is a tie.
pub const TIE_EPSILON: f32 = 1e-6;

/// Parameters from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackerParams {
    /// `predictor.min_training_sessions`.
    pub min_training_sessions: u32,
    /// `predictor.drift_reset_window`.
    pub drift_window: u32,
}

/// The running state, as recorded by the latest comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Tracker {
    /// Success-rate EMA.
    pub success_rate: f32,
    /// Cold start has been exited.
    pub cold_start_exited: bool,
    /// Sessions since the exit (counting the exit's).
    pub sessions_after_cold_start: u32,
    /// Consecutive EMA-updating comparisons with a success rate below 0.3.
    pub low_streak: u32,
    /// Outcomes of the latest EMA-updating comparisons (at most [`EXIT_WINDOW`]).
    pub recent: VecDeque<f32>,
    /// Sessions scored with confidence ≥ 0.6.
    pub scored_sessions: u64,
    /// A model has been promoted.
    pub trained: bool,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker {
            success_rate: INITIAL_SUCCESS,
            cold_start_exited: false,
            sessions_after_cold_start: 0,
            low_streak: 0,
            recent: VecDeque::new(),
            scored_sessions: 0,
            trained: false,
        }
    }
}

/// What one scored session contributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// Continuity scorer confidence.
    pub confidence: f32,
    /// NDCG margin (predictor − baseline) when the session can be compared:
    /// the predictor scored its rankings and something relevant was in the pool.
    pub margin: Option<f32>,
}

/// The outcome of one observation, as recorded in `comparison.recorded`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The session updated the EMA.
    pub ema_updated: bool,
    /// 1 win, 0.5 tie, 0 loss (when the EMA was updated).
    pub outcome: Option<f32>,
    /// Success rate after this session.
    pub success_rate: f32,
    /// α after this session.
    pub alpha: f32,
    /// Cold start exited as of this session.
    pub cold_start_exited: bool,
    /// Sessions since the exit, counting this one (0 in cold start).
    pub sessions_after_cold_start: u32,
    /// Drift detected: a reset follows this comparison.
    pub drift: bool,
}

/// Win value of a margin: 1, ½ or 0.
pub fn outcome(margin: f32) -> f32 {
    if margin > TIE_EPSILON {
        1.0
    } else if margin >= -TIE_EPSILON {
        0.5
    } else {
        0.0
    }
}

impl Tracker {
    /// Applies one scored session.
    pub fn observe(&mut self, obs: Observation, params: &TrackerParams) -> Step {
        let confident = obs.confidence >= MIN_SCORER_CONFIDENCE;
        if confident {
            self.scored_sessions += 1;
        }
        let outcome = obs.margin.filter(|_| confident).map(outcome);
        if let Some(w) = outcome {
            self.success_rate = (1.0 - EMA) * self.success_rate + EMA * w;
            self.recent.push_back(w);
            while self.recent.len() > EXIT_WINDOW {
                self.recent.pop_front();
            }
            if self.success_rate < DRIFT_THRESHOLD {
                self.low_streak += 1;
            } else {
                self.low_streak = 0;
            }
        }
        if self.cold_start_exited {
            self.sessions_after_cold_start += 1;
        } else if self.exit_allowed(params) {
            self.cold_start_exited = true;
            self.sessions_after_cold_start = 1;
        }
        let alpha = if self.trained {
            alpha_for(self.cold_start_exited, self.sessions_after_cold_start, self.success_rate)
        } else {
            1.0
        };
        let drift = outcome.is_some() && self.trained && self.low_streak >= params.drift_window.max(1);
        let step = Step {
            ema_updated: outcome.is_some(),
            outcome,
            success_rate: self.success_rate,
            alpha,
            cold_start_exited: self.cold_start_exited,
            sessions_after_cold_start: self.sessions_after_cold_start,
            drift,
        };
        if drift {
            self.reset_for_drift();
        }
        step
    }

    fn exit_allowed(&self, params: &TrackerParams) -> bool {
        self.trained
            && self.scored_sessions >= u64::from(params.min_training_sessions)
            && self.success_rate > COLD_START_SUCCESS
            && self.recent.len() >= EXIT_WINDOW
            && self.recent.iter().sum::<f32>() / self.recent.len() as f32 > COLD_START_SUCCESS
    }

    /// The state after a drift reset: α back to 1, EMA at 0.5, cold start again.
    pub fn reset_for_drift(&mut self) {
        self.success_rate = INITIAL_SUCCESS;
        self.cold_start_exited = false;
        self.sessions_after_cold_start = 0;
        self.low_streak = 0;
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: TrackerParams = TrackerParams { min_training_sessions: 10, drift_window: 10 };

    fn obs(margin: f32) -> Observation {
        Observation { confidence: 0.9, margin: Some(margin) }
    }

    #[test]
    fn ema_updates_only_on_confident_comparable_sessions() {
        let mut t = Tracker { trained: true, ..Tracker::default() };
        let s = t.observe(Observation { confidence: 0.5, margin: Some(0.3) }, &P);
        assert!(!s.ema_updated);
        assert_eq!(s.success_rate, 0.5);
        assert_eq!(t.scored_sessions, 0, "low-confidence sessions do not count");
        let s = t.observe(Observation { confidence: 0.9, margin: None }, &P);
        assert!(!s.ema_updated, "no predictor scores or nothing relevant");
        assert_eq!(t.scored_sessions, 1);
        let s = t.observe(obs(0.2), &P);
        assert!(s.ema_updated);
        assert!((s.success_rate - 0.55).abs() < 1e-6, "0.9·0.5 + 0.1·1");
        let s = t.observe(obs(-0.2), &P);
        assert!((s.success_rate - 0.495).abs() < 1e-6);
        let s = t.observe(obs(0.0), &P);
        assert!((s.success_rate - (0.9 * 0.495 + 0.05)).abs() < 1e-6, "a tie counts half");
        assert_eq!(s.outcome, Some(0.5));
    }

    #[test]
    fn cold_start_needs_a_model_sessions_and_ten_good_comparisons() {
        let mut t = Tracker::default();
        for _ in 0..12 {
            let s = t.observe(obs(0.1), &P);
            assert!(!s.cold_start_exited, "no model yet");
            assert_eq!(s.alpha, 1.0);
        }
        let mut t = Tracker { trained: true, ..Tracker::default() };
        for i in 0..9 {
            let s = t.observe(obs(0.1), &P);
            assert!(!s.cold_start_exited, "only {} comparisons", i + 1);
            assert_eq!(s.alpha, 1.0);
        }
        let s = t.observe(obs(0.1), &P);
        assert!(s.cold_start_exited);
        assert_eq!(s.sessions_after_cold_start, 1);
        assert_eq!(s.alpha, 0.8, "early-active floor");
        // A model that loses cannot exit even with enough sessions.
        let mut t = Tracker { trained: true, ..Tracker::default() };
        for _ in 0..20 {
            assert!(!t.observe(obs(-0.1), &P).cold_start_exited);
        }
    }

    #[test]
    fn ramp_floors_then_alpha_follows_success() {
        let mut t = Tracker { trained: true, ..Tracker::default() };
        let mut steps = Vec::new();
        for _ in 0..40 {
            steps.push(t.observe(obs(0.1), &P));
        }
        let exit = steps.iter().position(|s| s.cold_start_exited).unwrap();
        assert_eq!(steps[exit + 9].sessions_after_cold_start, 10);
        assert_eq!(steps[exit + 9].alpha, 0.8);
        assert_eq!(steps[exit + 10].alpha, 0.6);
        let last = steps.last().unwrap();
        assert!(last.sessions_after_cold_start > 20);
        assert!((last.alpha - (1.0 - last.success_rate)).abs() < 1e-6);
        assert!(last.alpha < 0.2);
    }

    #[test]
    fn drift_needs_a_full_window_of_low_success_and_resets_once() {
        let mut t = Tracker { trained: true, ..Tracker::default() };
        let mut drifts = Vec::new();
        for i in 0..60 {
            // Excluded sessions in between neither extend nor break the streak.
            assert!(!t.observe(Observation { confidence: 0.2, margin: Some(-1.0) }, &P).drift);
            let s = t.observe(obs(-0.3), &P);
            if s.drift {
                drifts.push(i);
                assert!(s.success_rate < DRIFT_THRESHOLD);
                assert_eq!(t.success_rate, INITIAL_SUCCESS, "the EMA restarts at 0.5");
                assert!(!t.cold_start_exited);
            }
        }
        // 0.5·0.9^n < 0.3 from n = 5; then 10 consecutive low sessions.
        assert_eq!(drifts.first(), Some(&13));
        assert!(drifts.windows(2).all(|w| w[1] - w[0] >= 10), "{drifts:?}");
        assert!(drifts.len() <= 4, "never on every session: {drifts:?}");
        // Without a model there is nothing to reset.
        let mut t = Tracker::default();
        assert!((0..40).all(|_| !t.observe(obs(-0.3), &P).drift));
    }
}
