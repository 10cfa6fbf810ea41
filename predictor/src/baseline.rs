//! The baseline's effective score (Signet's `effectiveScore`): pinned memories score 1, others decay 5% a day.

/// Daily decay factor of the baseline (half-life ≈ 13.5 days).
pub const DAILY_DECAY: f32 = 0.95;

/// `1.0` if pinned, else `importance · 0.95^age_days` (fractional days; a negative age counts as 0).
pub fn effective_score(importance: f32, age_days: f32, pinned: bool) -> f32 {
    if pinned { 1.0 } else { importance * DAILY_DECAY.powf(age_days.max(0.0)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_is_one_and_others_decay() {
        assert_eq!(effective_score(0.1, 100.0, true), 1.0);
        assert_eq!(effective_score(0.8, 0.0, false), 0.8);
        assert!((effective_score(0.8, 1.0, false) - 0.76).abs() < 1e-6);
        assert!((effective_score(1.0, 13.513, false) - 0.5).abs() < 1e-3);
        assert!((effective_score(0.5, 2.5, false) - 0.5 * 0.95f32.powf(2.5)).abs() < 1e-7);
    }
}
