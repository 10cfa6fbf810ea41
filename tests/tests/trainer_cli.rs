//! `engram-trainer` commands end to end: the run lock, the quick exit, logging
//! to a file, the external judge, the canary command's candidate and dataset
//! modes, and α surviving a rebuild of the projection.

#![allow(clippy::unwrap_used)]

mod trainer_world;

use std::time::{Duration, Instant};

use shared::base::fsutil::FileLock;
use trainer_world::{HOUR, World, small_config};

const CONFIG: &str = "[predictor]\ntrain_interval_sessions = 5\nmin_training_sessions = 10\nmax_training_seconds = 120\n\
                      candidate_pool_size = 40\nexploration_rate = 0.0\n[time]\ntimezone = \"UTC\"\n";

fn trained_world(config: &str) -> World {
    let mut w = World::new(config, small_config(), 11);
    for _ in 0..6 {
        w.sessions(5);
        w.run_trainer(&[]);
        if w.current().is_some() {
            return w;
        }
    }
    panic!("no model was promoted");
}

#[test]
fn a_second_run_exits_at_once_and_nothing_new_is_one_line() {
    let mut w = World::new(CONFIG, small_config(), 3);
    let line = w.run_trainer(&[]);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("nothing new: 0 sessions scored"), "{line}");

    w.sessions(3);
    let before = w.query::<String>("SELECT value FROM engram_state WHERE key = 'applied_lsn'");
    let held = FileLock::exclusive(&w.paths.trainer_lock()).unwrap();
    let started = Instant::now();
    let line = w.ok(&["run"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(line.starts_with("another engram-trainer run holds"), "{line}");
    assert_eq!(
        w.query::<String>("SELECT value FROM engram_state WHERE key = 'applied_lsn'"),
        before,
        "nothing written"
    );
    drop(held);

    let line = w.run_trainer(&[]);
    assert!(line.starts_with("scored 3 sessions"), "{line}");
    assert!(!line.contains("trained"), "3 new sessions are fewer than train_interval_sessions: {line}");
    assert!(
        line.contains("; not training: ") && line.contains("of 5 labelled sessions needed for a first model"),
        "{line}"
    );
    // Sessions that ended with nothing served cannot be labelled: the run says so.
    let key = shared::base::ids::SessionKey::new("claude", "unserved");
    let at = w.now();
    w.journal
        .append(&[
            shared::storage::event::Event::new(
                at,
                "sim",
                Some(key.clone()),
                shared::storage::event::Body::SessionStarted(Default::default()),
            ),
            shared::storage::event::Event::new(
                at,
                "sim",
                Some(key),
                shared::storage::event::Body::SessionEnded(Default::default()),
            ),
        ])
        .unwrap();
    let line = w.run_trainer(&[]);
    assert!(line.starts_with("nothing new: 3 sessions scored; not training: "), "{line}");
    assert!(line.contains("1 ended session had no memories served"), "{line}");
}

#[test]
fn log_file_for_cron_and_stdout_only_the_summary() {
    let mut w = World::new(CONFIG, small_config(), 4);
    w.sessions(2);
    let out =
        w.cmd(&["run", "--log-file", "--now", &w.now().0.to_string()]).env("ENGRAM_LOG", "info").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(w.paths.logs().join("trainer.log")).unwrap();
    assert!(log.contains("scored") && log.contains("sim-0000"), "{log}");
}

#[test]
fn a_home_that_does_not_exist_is_refused_and_not_created() {
    let w = World::new(CONFIG, small_config(), 5);
    let missing = w.dir.path().join("no-such-home");
    for args in [&["run"][..], &["report", "--html", "r.html"][..]] {
        let mut all = vec!["--home", missing.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = w.cmd(&all).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no such directory"), "{err}");
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
    // The world's own home, named with --home, still works.
    let home = w.paths.home().to_str().unwrap().to_owned();
    assert!(w.ok(&["--home", &home, "run", "--now", &w.now().0.to_string()]).contains("scored"));
}

#[test]
fn an_external_judge_is_blended_in_and_a_broken_one_is_ignored() {
    let judge = "cat > /dev/null; echo '{\"overall_score\": 0.9, \"confidence\": 0.8, \"per_memory_scores\": {}, \"reasoning\": \"fine\"}'";
    let config = format!("{CONFIG}[judge]\ncommand = [\"sh\", \"-c\", {judge:?}]\ntimeout_ms = 5000\n");
    let mut w = World::new(&config, small_config(), 5);
    w.sessions(2);
    w.run_trainer(&[]);
    let judged: i64 = w.query("SELECT COUNT(*) FROM session_scores WHERE scorer = 'continuity-v1+judge'");
    assert_eq!(judged, 2);
    let reasoning: String = w.query("SELECT continuity_reasoning FROM session_scores LIMIT 1");
    assert!(reasoning.contains("judge") && reasoning.contains("fine"), "{reasoning}");

    let broken = format!("{CONFIG}[judge]\ncommand = [\"sh\", \"-c\", \"sleep 20\"]\ntimeout_ms = 200\n");
    std::fs::write(w.paths.config(), broken).unwrap();
    w.sessions(1);
    let started = Instant::now();
    w.run_trainer(&[]);
    assert!(started.elapsed() < Duration::from_secs(15));
    let plain: i64 = w.query("SELECT COUNT(*) FROM session_scores WHERE scorer = 'continuity-v1'");
    assert_eq!(plain, 1, "a judge that times out is never required");
}

#[test]
fn canary_flags_a_regressing_candidate_and_reads_datasets() {
    let w = trained_world(CONFIG);
    let later = (w.now().0 + HOUR).to_string();
    let base = w.base_weights.display().to_string();
    // The untrained base weights as a candidate: far below the serving model.
    let out = w.trainer(&["canary", "--checkpoint", &base, "--now", &later]);
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("candidate's NDCG@10"), "{text}");
    let out = w.trainer(&["canary", "--checkpoint", &base, "--json", "--now", &later]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["candidate"]["ndcg_delta"].as_f64().unwrap() < -0.15, "{json}");
    assert!(json["candidate"]["top5_overlap"].as_f64().is_some());

    // A dataset file: one list of stored memories with labels.
    let dataset = w.dir.path().join("eval.jsonl");
    std::fs::write(
        &dataset,
        "{\"query\": \"what about cedar?\", \"memory_ids\": [\"mem_deploy_cedar\", \"mem_generic_ruby\", \"mem_billing_kale\"], \"labels\": [1, 0, 0], \"project\": \"atlas\"}\n\n\
         {\"query\": \"borealis retry limits\", \"memory_ids\": [\"mem_north_fjord\", \"mem_generic_zinc\"], \"labels\": [0, 1]}\n",
    )
    .unwrap();
    let out = w.trainer(&["canary", "--dataset", dataset.to_str().unwrap(), "--json"]);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["lists"], 2);
    assert_eq!(json["evaluable"], 2);
    assert!(json["baseline_ndcg"].as_f64().unwrap() > 0.0);
    std::fs::write(&dataset, "{\"query\": \"x\", \"memory_ids\": [\"a\"], \"labels\": []}\n").unwrap();
    let out = w.trainer(&["canary", "--dataset", dataset.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1") && err.contains("1 memory ids but 0 labels"), "{err}");
}

#[test]
fn alpha_and_cold_start_survive_a_rebuild_from_the_tapes() {
    let mut w = trained_world(CONFIG);
    w.sessions(5);
    w.run_trainer(&[]);
    let before = w.state();
    let dump = |w: &mut World| {
        w.journal.catch_up().unwrap();
        let conn = w.journal.store().conn();
        let tables = ["session_scores", "predictor_comparisons", "predictor_training_log", "models", "drift_resets"];
        tables
            .iter()
            .map(|t| {
                let n: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0)).unwrap();
                format!("{t}={n}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let counts = dump(&mut w);
    shared::projection::replay(&w.paths, &mut |_| {}).unwrap();
    w.journal.reopen_if_replaced().unwrap();
    assert_eq!(dump(&mut w), counts);
    assert_eq!(w.state(), before, "derived from events alone");
}
