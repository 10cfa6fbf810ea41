//! Unattended learning: when the write-side hooks start `engram-trainer run`.
//!
//! The hooks' ingestion worker (off the agent's critical path) calls
//! [`maybe_start`] each time it has drained its queue, so right after the
//! transcript of a session that ended is ingested. A run is **due** when
//! `predictor.auto_train` is on, at least `auto_train_min_sessions` ended
//! sessions with served rankings wait to be labelled, and the last run the
//! hooks started began at least `auto_train_interval_minutes` ago. It is
//! then started detached and **lock-coalesced**: `engram-trainer run
//! --log-file` in its own process group, holding `hooks/train.lock` for its
//! whole life ([`crate::domain::hook::start_detached`]), so at most one such run
//! exists and a worker that finds the lock taken starts nothing (the
//! running one, or the next, picks the sessions up). The run itself decides
//! whether there is enough to train on (and says why not in
//! `logs/trainer.log`); every run labels the waiting sessions and records
//! their comparisons, which is what moves α.
//!
//! `hooks/train.last` holds the time (ms) the last run was started, so the
//! interval holds across processes. It is scheduling bookkeeping, like the
//! ingestion queue, not state of the memory: the projection does not need it
//! and replay never sees it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::base::config::PredictorConfig;
use crate::base::error::Result;
use crate::base::paths::Paths;
use crate::base::time::Ts;
use crate::storage::store::Store;

/// The trainer's binary name, looked for next to the calling binary.
pub const TRAINER_BIN: &str = "engram-trainer";

/// The lock a hook-started run holds for its whole life.
pub fn lock_file(paths: &Paths) -> PathBuf {
    paths.home().join("hooks").join("train.lock")
}

/// When the hooks last started a run (ms, as text).
pub fn stamp_file(paths: &Paths) -> PathBuf {
    paths.home().join("hooks").join("train.last")
}

/// Ended sessions with served rankings that wait to be labelled and can be
/// (the trainer's `sessions::pending`, counted: see [`super::waiting`]).
pub fn pending_sessions(store: &Store) -> Result<u64> {
    Ok(super::waiting::ready(store)?.len() as u64)
}

/// When the hooks last started a run, if they ever did.
pub fn last_start(paths: &Paths) -> Option<Ts> {
    fs::read_to_string(stamp_file(paths)).ok().and_then(|t| t.trim().parse::<i64>().ok()).map(Ts)
}

/// Whether a run is due, and why (not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start one: this many sessions wait.
    Due {
        /// Sessions waiting to be labelled.
        pending: u64,
    },
    /// Not now, and why.
    NotDue(String),
}

/// Decides from the configuration, the sessions waiting in `store` and the
/// last start (see the module documentation).
pub fn decide(store: &Store, config: &PredictorConfig, last: Option<Ts>, now: Ts) -> Result<Decision> {
    if !config.auto_train {
        return Ok(Decision::NotDue("predictor.auto_train is off".into()));
    }
    let pending = pending_sessions(store)?;
    let needed = u64::from(config.auto_train_min_sessions.max(1));
    if pending < needed {
        return Ok(Decision::NotDue(format!("{pending} of {needed} ended sessions wait to be labelled")));
    }
    let interval_ms = i64::try_from(config.auto_train_interval_minutes.saturating_mul(60_000)).unwrap_or(i64::MAX);
    if let Some(last) = last {
        let since = now.0.saturating_sub(last.0);
        if since < interval_ms {
            return Ok(Decision::NotDue(format!(
                "the last run started {} min ago; the next may start after {} min",
                since / 60_000,
                config.auto_train_interval_minutes
            )));
        }
    }
    Ok(Decision::Due { pending })
}

/// What [`maybe_start`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Started {
    /// A run was started.
    Started {
        /// Sessions waiting to be labelled.
        pending: u64,
    },
    /// One is already running (it holds the lock).
    Running,
    /// Due, but the trainer binary is not there.
    NoTrainer,
    /// Not due, and why.
    NotDue(String),
}

/// Starts `trainer run --log-file` detached when a run is due (see the
/// module documentation). `trainer` is the `engram-trainer` binary.
pub fn maybe_start(paths: &Paths, config: &PredictorConfig, trainer: &Path, now: Ts) -> Result<Started> {
    let decision = {
        let store = Store::open(&paths.db())?;
        decide(&store, config, last_start(paths), now)?
    };
    let pending = match decision {
        Decision::Due { pending } => pending,
        Decision::NotDue(why) => return Ok(Started::NotDue(why)),
    };
    if !trainer.is_file() {
        return Ok(Started::NoTrainer);
    }
    let lock = lock_file(paths);
    match crate::domain::hook::start_detached(paths, &lock, trainer, &["run", "--log-file"]) {
        Ok(true) => {
            let stamp = stamp_file(paths);
            if let Err(e) = crate::base::fsutil::atomic_write(&stamp, now.0.to_string().as_bytes()) {
                tracing::warn!(file = %stamp.display(), error = %e, "cannot record when the run started");
            }
            Ok(Started::Started { pending })
        }
        Ok(false) => Ok(Started::Running),
        Err(e) => {
            Err(crate::base::error::Error::Io { op: "start engram-trainer", path: trainer.to_path_buf(), source: e })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::base::ids::SessionKey;
    use crate::storage::event::{Body, Event, RankingServed, SessionEnded, SessionStarted};
    use crate::storage::journal::Journal;

    fn ended(j: &mut Journal, id: &str, served: bool) {
        let key = SessionKey::new("claude", id);
        let mut events =
            vec![Event::new(Ts(10), "t", Some(key.clone()), Body::SessionStarted(SessionStarted::default()))];
        if served {
            events.push(Event::new(
                Ts(11),
                "t",
                Some(key.clone()),
                Body::RankingServed(RankingServed {
                    ranking_id: format!("rk_{id}"),
                    query: "q".into(),
                    trigger: "prompt".into(),
                    ..RankingServed::default()
                }),
            ));
        }
        events.push(Event::new(Ts(12), "t", Some(key), Body::SessionEnded(SessionEnded::default())));
        j.append(&events).unwrap();
    }

    #[test]
    fn a_run_is_due_after_enough_served_sessions_and_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let mut j = crate::projection::open(&paths, "t").unwrap();
        let config =
            PredictorConfig { auto_train_min_sessions: 2, auto_train_interval_minutes: 10, ..Default::default() };
        let now = Ts(100 * 60_000);
        ended(&mut j, "a", true);
        ended(&mut j, "b", false);
        let d = decide(j.store(), &config, None, now).unwrap();
        assert_eq!(
            d,
            Decision::NotDue("1 of 2 ended sessions wait to be labelled".into()),
            "unserved sessions do not count"
        );
        ended(&mut j, "c", true);
        assert_eq!(decide(j.store(), &config, None, now).unwrap(), Decision::Due { pending: 2 });
        let recent = Ts(now.0 - 3 * 60_000);
        let d = decide(j.store(), &config, Some(recent), now).unwrap();
        assert!(matches!(&d, Decision::NotDue(w) if w.contains("3 min ago")), "{d:?}");
        assert_eq!(
            decide(j.store(), &config, Some(Ts(now.0 - 10 * 60_000)), now).unwrap(),
            Decision::Due { pending: 2 }
        );
        let off = PredictorConfig { auto_train: false, ..config };
        assert!(matches!(decide(j.store(), &off, None, now).unwrap(), Decision::NotDue(_)));
    }

    #[test]
    fn a_missing_trainer_starts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let mut j = crate::projection::open(&paths, "t").unwrap();
        ended(&mut j, "a", true);
        drop(j);
        let r = maybe_start(&paths, &PredictorConfig::default(), &dir.path().join("nope"), Ts(0)).unwrap();
        assert_eq!(r, Started::NoTrainer);
        assert!(last_start(&paths).is_none());
    }
}
