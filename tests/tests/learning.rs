//! Learning that happens by itself, shown in simulated use: three weeks of
//! one user's sessions played only through the installed hooks and the
//! transcripts they leave (`tests::learning`), with a time-of-day pattern
//! the baseline cannot see. Nobody runs the trainer: the hooks start it.
//! The same simulation prints its figures with
//! `cargo run --release -p tests --bin learning`.

#![allow(clippy::unwrap_used)]

use tests::learning::{Options, run};

#[test]
fn the_predictor_trains_unattended_leaves_cold_start_and_serves_the_planted_pattern_better() {
    let f = run(&Options::default(), &mut |line| eprintln!("{line}")).unwrap();
    eprintln!("{f}");
    for l in &f.trainer_lines {
        eprintln!("  {l}");
    }
    assert_eq!(f.memories_learned, tests::learning::PLANTED.len());
    assert!(f.training_runs >= 2 && f.promotions >= 1, "trained and promoted by the runs the hooks started:\n{f}");
    assert!(f.trainer_lines.iter().any(|l| l.contains("not training: ")), "a run that did not train says why");
    assert!(f.cold_start_exited, "left cold start:\n{f}");
    assert!(f.comparisons >= 20 && f.win_rate() > 0.5, "wins more than half its comparisons:\n{f}");
    assert!(f.alpha < 1.0 && f.min_alpha < 1.0, "α fell below 1:\n{f}");
    let before = f.before;
    let after = f.after;
    assert!(after.served > before.served + 0.1, "what is served in the planted situations improved:\n{f}");
    assert!(after.predictor.unwrap() > after.baseline + 0.2, "the predictor ranks the planted pattern:\n{f}");
}
