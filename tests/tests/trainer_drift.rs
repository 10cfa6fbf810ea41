//! Concept drift end to end: once the predictor has earned influence, the
//! user's work changes so that it keeps losing to the baseline; after
//! `drift_reset_window` consecutive low-success comparisons the trainer resets
//! α and the success rate, records `drift.reset` once (not on every session),
//! and retrains from fresh weights with a replay buffer.

#![allow(clippy::unwrap_used)]

mod trainer_world;

use trainer_world::{World, small_config};

const CONFIG: &str = "[predictor]\ntrain_interval_sessions = 5\nmin_training_sessions = 10\nmax_training_seconds = 120\n\
                      drift_reset_window = 3\ncandidate_pool_size = 40\nexploration_rate = 0.0\n[time]\ntimezone = \"UTC\"\n";

#[test]
fn sustained_losses_reset_alpha_once_and_retrain_with_replay() {
    let mut w = World::new(CONFIG, small_config(), 17);
    for _ in 0..10 {
        w.sessions(5);
        eprintln!("{}", w.run_trainer(&[]).trim());
        if w.state().cold_start_exited {
            break;
        }
    }
    assert!(w.state().cold_start_exited, "the predictor first earns influence");
    assert_eq!(w.query::<i64>("SELECT COUNT(*) FROM drift_resets"), 0, "no drift while it wins");

    w.drifted = true;
    let mut saw_drift_state = false;
    for _ in 0..8 {
        w.sessions(5);
        let line = w.run_trainer(&[]);
        eprintln!("{}", line.trim());
        if line.contains("drift reset") {
            saw_drift_state = true;
            let s = w.state();
            eprintln!("{}", s.status_line());
            // The retrain either replaced the model (and comparisons start again from 0.5)
            // or left the reset pending; either way the predictor has no influence now.
            assert_eq!(s.alpha, 1.0);
            assert!(!s.cold_start_exited);
            break;
        }
    }
    assert!(saw_drift_state, "sustained losses trigger a drift reset");
    let resets: i64 = w.query("SELECT COUNT(*) FROM drift_resets");
    assert_eq!(resets, 1, "one reset, not one per session");
    let reset_rate: f64 = w.query("SELECT success_rate FROM drift_resets");
    assert!(reset_rate < 0.3, "{reset_rate}");
    let retrains: i64 = w.query(
        "SELECT COUNT(*) FROM predictor_training_log WHERE drift_retrain = 1
         AND created_ms > (SELECT MAX(created_ms) FROM drift_resets)",
    );
    assert_eq!(retrains, 1, "a retrain follows the reset");
    let counted: i64 = w.query(
        "SELECT drift_resets FROM predictor_training_log WHERE drift_retrain = 1 ORDER BY created_ms DESC LIMIT 1",
    );
    assert_eq!(counted, 1, "the training log counts drift resets");
    // The comparison that triggered it was the third low one in a row.
    let low: i64 = w.query(
        "SELECT COUNT(*) FROM (SELECT success_rate FROM predictor_comparisons WHERE ema_updated = 1
         AND created_ms <= (SELECT MAX(created_ms) FROM drift_resets) ORDER BY created_ms DESC LIMIT 3)
         WHERE success_rate < 0.3",
    );
    assert_eq!(low, 3);

    // After the reset the success rate starts again from 0.5.
    w.sessions(5);
    eprintln!("{}", w.run_trainer(&[]).trim());
    let first_after: f64 = w.query(
        "SELECT success_rate FROM predictor_comparisons WHERE ema_updated = 1
         AND created_ms > (SELECT MAX(created_ms) FROM drift_resets) ORDER BY created_ms LIMIT 1",
    );
    assert!((first_after - 0.5).abs() <= 0.05 + 1e-6, "{first_after}");
}
