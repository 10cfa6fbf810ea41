//! The validation gates and the atomic promotion, end to end: corrupted labels
//! make the gates fail and the old model keeps serving (and the canary command
//! flags a serving model that falls below the baseline); SIGKILL at any moment
//! of a run never leaves `models/current` naming a missing or unreadable
//! checkpoint.

#![allow(clippy::unwrap_used)]

mod trainer_world;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use predictor::model::ModelConfig;
use shared::base::ids::MemoryId;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event, SessionScored};
use trainer_world::{HOUR, Rng, World, small_config};

const CONFIG: &str = "[predictor]\ntrain_interval_sessions = 5\nmin_training_sessions = 10\nmax_training_seconds = 120\n\
                      candidate_pool_size = 40\nexploration_rate = 0.0\n[time]\ntimezone = \"UTC\"\n";

/// A world with a promoted model: rounds of five sessions and a run until one is.
fn trained_world(config: &str, model: ModelConfig) -> World {
    let mut w = World::new(config, model, 11);
    for _ in 0..6 {
        w.sessions(5);
        let line = w.run_trainer(&[]);
        eprintln!("{}", line.trim());
        if w.current().is_some() {
            return w;
        }
    }
    panic!("no model was promoted");
}

/// Appends, for every scored session `which` selects, a new outcome whose
/// labels are inverted: relevant → 0, and the first `promote` irrelevant
/// ones (by id) → 1. A few promoted memories make a sharp wrong target for
/// training; promoting all of them turns every ranking upside down.
fn corrupt_labels(w: &mut World, promote: usize, which: impl Fn(&shared::base::ids::SessionKey) -> bool) -> usize {
    w.journal.catch_up().unwrap();
    let store = w.journal.store();
    let sessions = shared::domain::training::data::scored_sessions(store, 0.0).unwrap();
    let mut events = Vec::new();
    for s in sessions.iter().filter(|s| which(&s.session_key)) {
        let rows: Vec<(String, Option<f64>)> = store
            .conn()
            .prepare("SELECT memory_id, label FROM session_memories WHERE session_key = ?1 ORDER BY memory_id")
            .unwrap()
            .query_map([s.session_key.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut labels: BTreeMap<MemoryId, f32> = BTreeMap::new();
        let mut promoted = 0;
        for (id, l) in rows {
            let label = if l.unwrap_or(0.0) <= 0.2 && promoted < promote {
                promoted += 1;
                1.0
            } else {
                0.0
            };
            labels.insert(MemoryId(id), label);
        }
        events.push(Event::new(
            Ts(w.now().0 + events.len() as i64),
            "corruptor",
            Some(s.session_key.clone()),
            Body::SessionScored(SessionScored {
                score: 0.9,
                confidence: s.confidence,
                labels,
                scorer: "corrupted".into(),
                ..SessionScored::default()
            }),
        ));
    }
    let n = events.len();
    w.journal.append(&events).unwrap();
    n
}

#[test]
fn corrupted_labels_fail_the_gates_and_the_old_model_keeps_serving() {
    let mut w = trained_world(CONFIG, small_config());
    let serving = w.current().unwrap();
    let models: i64 = w.query("SELECT COUNT(*) FROM models");
    let version = w.state().model_version.unwrap();

    // Training data (never the canary) gets inverted labels.
    let corrupted = corrupt_labels(&mut w, 3, |k| !trainer::canary::is_canary(k));
    assert!(corrupted >= 5, "{corrupted}");
    let line = w.run_trainer(&["--force"]);
    eprintln!("{}", line.trim());
    assert!(line.contains("gates failed"), "{line}");
    assert!(line.contains(&format!("v{version} keeps serving")), "{line}");
    let (passed, failure): (bool, Option<String>) = {
        w.journal.catch_up().unwrap();
        w.journal
            .store()
            .conn()
            .query_row(
                "SELECT gates_passed, failure FROM predictor_training_log ORDER BY created_ms DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert!(!passed);
    eprintln!("failure: {}", failure.as_deref().unwrap_or_default());
    assert!(failure.is_some_and(|f| f.contains("top-5 overlap") || f.contains("NDCG")));
    assert_eq!(w.current().unwrap(), serving, "models/current is untouched");
    assert_eq!(w.query::<i64>("SELECT COUNT(*) FROM models"), models, "nothing promoted");
    assert_eq!(w.state().model_version, Some(version));
    let failures: i64 =
        w.query("SELECT train_validation_failures FROM predictor_training_log ORDER BY created_ms DESC LIMIT 1");
    assert!(failures >= 1, "the failure is counted");
    // Later than every outcome the runs stamped.
    let later = (w.now().0 + HOUR).to_string();
    let out = w.trainer(&["canary", "--now", &later]);
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains(" 0 lists"), "{text}");

    // Now the canary's own labels are inverted: the serving model falls below the baseline.
    corrupt_labels(&mut w, usize::MAX, trainer::canary::is_canary);
    let out = w.trainer(&["canary", "--now", &later]);
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(3), "a regression exits 3: {text}");
    assert!(text.contains("REGRESSION") && text.contains("below the baseline"), "{text}");
    let out = w.trainer(&["canary", "--json", "--now", &later]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["regressions"].as_array().unwrap().len(), 1);
    assert!(json["serving"]["ndcg"].as_f64().unwrap() < json["baseline_ndcg"].as_f64().unwrap());
}

fn temp_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().ends_with(".tmp")).count())
        .unwrap_or(0)
}

fn assert_current_is_readable(w: &World, context: &str) {
    let hash = shared::storage::models::current_hash(&w.paths).unwrap_or_else(|e| panic!("{context}: {e}"));
    let hash = hash.unwrap_or_else(|| panic!("{context}: models/current vanished"));
    shared::storage::models::load(&w.paths, &hash, None).unwrap_or_else(|e| panic!("{context}: {e}"));
}

#[test]
fn sigkill_during_a_run_never_leaves_an_unreadable_current_model() {
    // Full-size hash tables make the checkpoint writes long enough to be hit.
    // (CONFIG's training budget never cuts training short, so every run's
    // outcome is independent of the machine's load.)
    let config = CONFIG;
    let big = ModelConfig { native_dim: 0, dim: 32, value_dim: 16, ..ModelConfig::default() };
    let mut w = trained_world(config, big);
    let models_dir = w.paths.models();
    let now = w.now().0.to_string();
    let run = ["run", "--force", "--now", now.as_str()];

    // How long an uninterrupted forced run takes.
    let started = Instant::now();
    let line = w.ok(&run);
    let full = started.elapsed();
    eprintln!("uninterrupted run {full:?}: {}", line.trim());
    assert_current_is_readable(&w, "after an uninterrupted run");

    let mut rng = Rng(5);
    let (mut during_write, mut random) = (0, 0);
    let mut i = 0;
    while (during_write < 2 || random < 3) && i < 14 {
        let mut child =
            w.cmd(&run).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        let t0 = Instant::now();
        if i % 2 == 0 {
            // Targeted: the moment a temporary checkpoint or pointer file appears.
            while temp_files(&models_dir) == 0
                && t0.elapsed() < Duration::from_secs(60)
                && child.try_wait().unwrap().is_none()
            {
                std::hint::spin_loop();
            }
            if temp_files(&models_dir) > 0 {
                during_write += 1;
            }
        } else {
            // A random moment of the run.
            let at = full.mul_f64((rng.below(1000) as f64) / 1000.0);
            while t0.elapsed() < at && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            random += 1;
        }
        let _ = child.kill(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        eprintln!(
            "kill {i} after {:?} ({}): {}",
            t0.elapsed(),
            out.status,
            String::from_utf8_lossy(&out.stdout).trim()
        );
        assert_current_is_readable(&w, &format!("after kill {i}"));
        i += 1;
    }
    assert!(during_write >= 1, "no kill landed while a model file was being written");

    // The next run completes any interrupted promotion and cleans up.
    let line = w.ok(&run);
    eprintln!("{}", line.trim());
    assert_current_is_readable(&w, "after recovery");
    let latest: String = w.query("SELECT checkpoint FROM models ORDER BY model_version DESC LIMIT 1");
    assert_eq!(w.current().unwrap(), latest, "models/current is the newest promoted checkpoint");
    assert_eq!(temp_files(&models_dir), 0, "no temporary file is left behind");
}
