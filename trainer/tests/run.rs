//! The run's bookkeeping through the library: a shutdown request before any
//! work, completing an interrupted promotion, and cleaning the models directory.

#![allow(clippy::unwrap_used)]

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event, ModelPromoted, SessionEnded, SessionStarted};
use shared::storage::journal::Journal;
use shared::storage::models;
use trainer::run::{RunOptions, RunOutcome, run};
use trainer::training;

fn checkpoint(seed: u64, version: u64) -> Vec<u8> {
    let config = ModelConfig { native_dim: 0, dim: 8, value_dim: 4, hash_buckets: 64, ..ModelConfig::default() };
    checkpoint::encode(&Checkpoint {
        flags: Flags::default(),
        model: Model::new(config, seed).unwrap(),
        optimizer: None,
        meta: TrainingMeta { model_version: version, ..TrainingMeta::default() },
    })
}

fn promoted(j: &Journal, version: u64, hash: &str) -> Event {
    j.event(
        Ts(1_000 + version as i64),
        None,
        Body::ModelPromoted(ModelPromoted {
            model_version: version,
            checkpoint: hash.into(),
            run_id: format!("tr{version}"),
        }),
    )
}

#[test]
fn a_shutdown_request_stops_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let s = SessionKey::new("claude", "x");
    j.append(&[
        Event::new(Ts(1), "test", Some(s.clone()), Body::SessionStarted(SessionStarted::default())),
        Event::new(Ts(2), "test", Some(s), Body::SessionEnded(SessionEnded::default())),
    ])
    .unwrap();
    let shutdown = Shutdown::manual();
    shutdown.request();
    let RunOutcome::Done(summary) = run(&paths, &Config::default(), &RunOptions::default(), &shutdown).unwrap() else {
        panic!("the lock is free");
    };
    assert!(summary.interrupted);
    assert_eq!(summary.scored, 0);
    assert!(summary.training.is_none());
    assert!(summary.to_string().contains("interrupted"), "{summary}");
}

#[test]
fn an_interrupted_promotion_is_completed_and_a_broken_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let h1 = models::write_checkpoint(&paths, &checkpoint(1, 1)).unwrap();
    models::promote(&paths, &h1).unwrap();
    let e1 = promoted(&j, 1, &h1);
    j.append(&[e1]).unwrap();
    assert_eq!(training::reconcile(&paths, j.store()).unwrap(), None, "nothing to do");

    // Killed after the event, before the pointer.
    let h2 = models::write_checkpoint(&paths, &checkpoint(2, 2)).unwrap();
    let e2 = promoted(&j, 2, &h2);
    j.append(&[e2]).unwrap();
    assert_eq!(models::current_hash(&paths).unwrap().unwrap(), h1);
    assert_eq!(training::reconcile(&paths, j.store()).unwrap(), Some(h2.clone()));
    assert_eq!(models::current_hash(&paths).unwrap().unwrap(), h2);

    // A promoted checkpoint that no longer reads is never pointed at.
    let h3 = models::write_checkpoint(&paths, &checkpoint(3, 3)).unwrap();
    let file = paths.models().join(format!("{h3}.ckpt"));
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[200] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let e3 = promoted(&j, 3, &h3);
    j.append(&[e3]).unwrap();
    assert_eq!(training::reconcile(&paths, j.store()).unwrap(), None);
    assert_eq!(models::current_hash(&paths).unwrap().unwrap(), h2, "the readable model keeps serving");
}

#[test]
fn prune_keeps_current_and_the_newest_versions() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let mut hashes = Vec::new();
    for v in 1..=5u64 {
        let h = models::write_checkpoint(&paths, &checkpoint(v, v)).unwrap();
        models::write_optimizer(&paths, &h, b"adam").unwrap();
        let e = promoted(&j, v, &h);
        j.append(&[e]).unwrap();
        hashes.push(h);
    }
    models::promote(&paths, &hashes[0]).unwrap(); // an operator pointed back at v1
    let orphan = models::write_checkpoint(&paths, &checkpoint(9, 9)).unwrap();
    std::fs::write(paths.models().join(".current.123.abc.tmp"), b"partial").unwrap();
    training::prune(&paths, j.store()).unwrap();
    let exists = |h: &str| paths.models().join(format!("{h}.ckpt")).exists();
    assert!(exists(&hashes[0]), "current is kept");
    assert!(!exists(&hashes[1]), "older versions go");
    assert!(exists(&hashes[2]) && exists(&hashes[3]) && exists(&hashes[4]), "the newest three stay");
    assert!(paths.models().join(format!("{}.adam", hashes[4])).exists());
    assert!(!exists(&orphan), "a checkpoint no event names goes");
    assert!(!paths.models().join(".current.123.abc.tmp").exists());
    assert!(paths.current_model().exists());
}
