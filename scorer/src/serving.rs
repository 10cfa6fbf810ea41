//! The serving weights: an immutable snapshot behind an `Arc`, swapped atomically.
//!
//! Readers ([`Slot::load`]) clone the `Arc` under a lock held for nanoseconds
//! and then score with no lock at all; a training run works on its own clone
//! and publishes the result with [`Slot::publish_if`], which refuses if the
//! weights changed underneath (a promotion arrived meanwhile). Nothing ever
//! mutates weights that are serving.
//!
//! [`PointerWatch`] notices a new `models/current` cheaply (one `stat` per
//! request; the file is only read when its inode, size or mtime changed) and
//! loads the checkpoint it names, verifying its blake3 against its name and
//! its internal checksum: a bad file is logged and the old weights keep serving.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use predictor::train::AdamState;
use shared::models;
use shared::paths::Paths;
use shared::time::Ts;

use crate::error::{Error, Result};

/// Seed of freshly initialised weights (deterministic, like the peer's).
pub const INIT_SEED: u64 = 0x51_9e7;

/// Where the serving weights come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Freshly initialised, never trained.
    Fresh,
    /// Loaded from the file given with `--checkpoint`.
    Checkpoint(PathBuf),
    /// Promoted by the trainer: `models/<hash>.ckpt` named by `models/current`.
    Promoted(String),
    /// Trained in this process (`train`, `train_from_db`).
    Trained,
}

impl Origin {
    /// Short name for `status`.
    pub fn name(&self) -> &'static str {
        match self {
            Origin::Fresh => "fresh",
            Origin::Checkpoint(_) => "checkpoint",
            Origin::Promoted(_) => "promoted",
            Origin::Trained => "trained",
        }
    }
}

/// One immutable set of serving weights with what `status` reports about them.
#[derive(Clone, Debug)]
pub struct Serving {
    /// The weights.
    pub model: Model,
    /// Adam state matching them, when known (kept in saved checkpoints).
    pub optimizer: Option<AdamState>,
    /// Model version (persisted in checkpoints; +1 per published training).
    pub version: u64,
    /// Trained, or loaded from a checkpoint.
    pub trained: bool,
    /// Lists trained on over the weights' life.
    pub training_pairs: u64,
    /// Optimizer steps over the weights' life.
    pub steps: u64,
    /// When last trained (ms since the epoch).
    pub last_trained_ms: Option<i64>,
    /// Where they come from.
    pub origin: Origin,
    /// Process-local publication counter (set by [`Slot`]).
    pub generation: u64,
}

impl Serving {
    /// Fresh weights for `native_dim`-sized embeddings.
    pub fn fresh(native_dim: usize) -> Result<Serving> {
        let config = ModelConfig { native_dim, ..ModelConfig::default() };
        Ok(Serving {
            model: Model::new(config, INIT_SEED)?,
            optimizer: None,
            version: 1,
            trained: false,
            training_pairs: 0,
            steps: 0,
            last_trained_ms: None,
            origin: Origin::Fresh,
            generation: 0,
        })
    }

    /// Weights from a decoded checkpoint.
    pub fn from_checkpoint(ckpt: Checkpoint, origin: Origin) -> Serving {
        let meta = ckpt.meta;
        Serving {
            model: ckpt.model,
            optimizer: ckpt.optimizer,
            version: meta.model_version.max(1),
            trained: true,
            training_pairs: meta.trained_lists,
            steps: meta.steps,
            last_trained_ms: (meta.timestamp_ms > 0).then_some(meta.timestamp_ms),
            origin,
            generation: 0,
        }
    }

    /// The checkpoint to save (weights, optimizer state, metadata).
    pub fn to_checkpoint(&self, flags: Flags) -> Checkpoint {
        Checkpoint {
            flags,
            model: self.model.clone(),
            optimizer: self.optimizer.clone(),
            meta: TrainingMeta {
                model_version: self.version,
                steps: self.steps,
                trained_lists: self.training_pairs,
                timestamp_ms: self.last_trained_ms.unwrap_or(0),
                notes: format!("engram-scorer {}", env!("CARGO_PKG_VERSION")),
            },
        }
    }

    /// `YYYY-MM-DDThh:mm:ssZ` of the last training, as Signet reports it.
    pub fn last_trained(&self) -> Option<String> {
        self.last_trained_ms.map(|ms| {
            let text = Ts(ms).to_rfc3339();
            // Drop the milliseconds: "2026-03-14T12:00:00.000Z" -> "2026-03-14T12:00:00Z".
            format!("{}Z", &text[..19])
        })
    }

    /// The blake3 of the serving checkpoint when it came from the data home.
    pub fn checkpoint_hash(&self) -> Option<&str> {
        match &self.origin {
            Origin::Promoted(h) => Some(h),
            _ => None,
        }
    }
}

/// The slot holding the serving weights.
///
/// At start the first weights may still be in preparation on another thread
/// (building fresh weights draws a million random numbers; loading a
/// checkpoint reads megabytes): [`Slot::load`] waits for them, [`Slot::peek`]
/// does not.
#[derive(Debug)]
pub struct Slot {
    current: RwLock<Option<Arc<Serving>>>,
    pending: Mutex<Option<JoinHandle<Serving>>>,
    next_generation: AtomicU64,
}

impl Slot {
    /// A slot serving `initial`.
    pub fn new(initial: Serving) -> Slot {
        let slot = Slot { current: RwLock::new(None), pending: Mutex::new(None), next_generation: AtomicU64::new(1) };
        slot.publish(initial);
        slot
    }

    /// A slot whose first weights `prepare` builds on another thread.
    pub fn preparing(prepare: impl FnOnce() -> Serving + Send + 'static) -> Slot {
        let handle =
            std::thread::Builder::new().name("scorer-load".into()).spawn(prepare).expect("spawn the loading thread");
        Slot { current: RwLock::new(None), pending: Mutex::new(Some(handle)), next_generation: AtomicU64::new(1) }
    }

    /// The serving weights now (waiting for the first ones if needed).
    pub fn load(&self) -> Arc<Serving> {
        if let Some(s) = self.peek() {
            return s;
        }
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = self.peek() {
            return s;
        }
        let first = match pending.take().map(JoinHandle::join) {
            Some(Ok(s)) => s,
            _ => {
                tracing::error!("preparing the first weights failed; serving fresh text-only weights");
                Serving::fresh(0).unwrap_or_else(|_| unreachable!("the default config is valid"))
            }
        };
        self.publish(first)
    }

    /// The serving weights if they are ready.
    pub fn peek(&self) -> Option<Arc<Serving>> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Serves `next` from now on.
    pub fn publish(&self, mut next: Serving) -> Arc<Serving> {
        next.generation = self.next_generation.fetch_add(1, Ordering::SeqCst);
        let next = Arc::new(next);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&next));
        next
    }

    /// Serves `next` only if the serving weights are still generation
    /// `expected`; otherwise gives `next` back.
    pub fn publish_if(&self, expected: u64, mut next: Serving) -> std::result::Result<Arc<Serving>, Box<Serving>> {
        let mut guard = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if guard.as_ref().map(|s| s.generation) != Some(expected) {
            return Err(Box::new(next));
        }
        next.generation = self.next_generation.fetch_add(1, Ordering::SeqCst);
        let next = Arc::new(next);
        *guard = Some(Arc::clone(&next));
        Ok(next)
    }
}

/// Loads an Engram checkpoint from any file (`--checkpoint`), checking its
/// checksum and that its embedding size is `native_dim`.
pub fn load_file(path: &Path, native_dim: usize) -> Result<Checkpoint> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read checkpoint", path, e))?;
    if bytes.starts_with(b"SGPT") {
        return Err(Error::params(
            "checkpoint",
            format!(
                "{} is a Signet SGPT checkpoint: its architecture is not Engram's; \
                 train_from_db will write an Engram checkpoint",
                path.display()
            ),
        ));
    }
    let ckpt = checkpoint::decode(&bytes, None)?;
    let found = ckpt.model.config().native_dim;
    if found != native_dim {
        return Err(Error::params(
            "checkpoint",
            format!("{} holds weights for {found}-dimensional embeddings, not {native_dim}", path.display()),
        ));
    }
    Ok(ckpt)
}

/// Identity of the pointer file as last seen.
type Stamp = (u64, i64, i64, u64);

/// Watches `models/current` (see the module documentation).
#[derive(Debug)]
pub struct PointerWatch {
    paths: Option<Paths>,
    stamp: Option<Stamp>,
    /// The hash last loaded or refused, so a bad file is not retried until it changes.
    seen: Option<String>,
}

impl PointerWatch {
    /// A watch on `paths`' pointer (none without a data home).
    pub fn new(paths: Option<Paths>) -> PointerWatch {
        PointerWatch { paths, stamp: None, seen: None }
    }

    fn stamp(&self) -> Option<Stamp> {
        let paths = self.paths.as_ref()?;
        let meta = std::fs::metadata(paths.current_model()).ok()?;
        Some((meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.len()))
    }

    /// Records the pointer's current state as seen without loading it
    /// (weights given with `--checkpoint` take precedence at start).
    /// Returns the hash the pointer names, if any.
    pub fn mark_seen(&mut self) -> Option<String> {
        self.stamp = self.stamp();
        self.seen = self.paths.as_ref().and_then(|p| models::current_hash(p).ok().flatten());
        self.seen.clone()
    }

    /// Forgets what was seen, so the next [`PointerWatch::poll`] loads the
    /// pointer's checkpoint even if it did not change (`reload`).
    pub fn forget(&mut self) {
        self.stamp = None;
        self.seen = None;
    }

    /// If the pointer changed since the last call, the checkpoint it now
    /// names: `Some(Ok)` to serve, `Some(Err)` for a bad one (log it and keep
    /// serving), `None` when nothing changed.
    pub fn poll(&mut self) -> Option<std::result::Result<Serving, Error>> {
        let stamp = self.stamp();
        if stamp == self.stamp {
            return None;
        }
        self.stamp = stamp;
        let paths = self.paths.as_ref()?;
        let hash = match models::current_hash(paths) {
            Ok(Some(h)) => h,
            Ok(None) => return None,
            Err(e) => return Some(Err(e.into())),
        };
        if self.seen.as_deref() == Some(hash.as_str()) {
            return None;
        }
        self.seen = Some(hash.clone());
        Some(match models::load(paths, &hash, None) {
            Ok(loaded) => Ok(Serving::from_checkpoint(loaded.checkpoint, Origin::Promoted(loaded.hash))),
            Err(e) => Err(e.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tiny_checkpoint(version: u64) -> Vec<u8> {
        let config = ModelConfig { native_dim: 0, dim: 8, value_dim: 4, hash_buckets: 64, ..ModelConfig::default() };
        checkpoint::encode(&Checkpoint {
            flags: Flags::default(),
            model: Model::new(config, version).unwrap(),
            optimizer: None,
            meta: TrainingMeta {
                model_version: version,
                trained_lists: 7,
                timestamp_ms: 1_700_000_000_000,
                ..TrainingMeta::default()
            },
        })
    }

    #[test]
    fn publish_if_refuses_when_weights_changed_underneath() {
        let slot = Slot::preparing(|| Serving::fresh(0).unwrap());
        let start = slot.load().generation;
        assert!(slot.peek().is_some());
        slot.publish(Serving::fresh(0).unwrap());
        let refused = slot.publish_if(start, Serving::fresh(0).unwrap());
        assert!(refused.is_err());
        let now = slot.load().generation;
        assert!(slot.publish_if(now, Serving::fresh(0).unwrap()).is_ok());
        assert!(slot.load().generation > now);
    }

    #[test]
    fn pointer_watch_loads_new_promotions_and_survives_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let mut watch = PointerWatch::new(Some(paths.clone()));
        assert!(watch.poll().is_none(), "no pointer yet");
        let h1 = models::write_checkpoint(&paths, &tiny_checkpoint(3)).unwrap();
        models::promote(&paths, &h1).unwrap();
        let s = watch.poll().unwrap().unwrap();
        assert_eq!((s.version, s.trained, s.training_pairs), (3, true, 7));
        assert_eq!(s.checkpoint_hash(), Some(h1.as_str()));
        assert_eq!(s.last_trained().as_deref(), Some("2023-11-14T22:13:20Z"));
        assert!(watch.poll().is_none(), "unchanged pointer");
        // A damaged checkpoint is refused (and not retried until the pointer moves).
        let h2 = models::write_checkpoint(&paths, &tiny_checkpoint(4)).unwrap();
        let file = paths.models().join(format!("{h2}.ckpt"));
        let mut bytes = std::fs::read(&file).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        std::fs::write(&file, bytes).unwrap();
        models::promote(&paths, &h2).unwrap();
        assert!(watch.poll().unwrap().is_err());
        assert!(watch.poll().is_none());
        let h3 = models::write_checkpoint(&paths, &tiny_checkpoint(5)).unwrap();
        models::promote(&paths, &h3).unwrap();
        assert_eq!(watch.poll().unwrap().unwrap().version, 5);
    }

    #[test]
    fn signet_and_mismatched_checkpoints_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let sgpt = dir.path().join("model.bin");
        std::fs::write(&sgpt, b"SGPT\x01\x00\x00\x00").unwrap();
        assert!(load_file(&sgpt, 768).unwrap_err().to_string().contains("Signet"));
        let ours = dir.path().join("ours.ckpt");
        std::fs::write(&ours, tiny_checkpoint(2)).unwrap();
        assert!(load_file(&ours, 768).unwrap_err().to_string().contains("0-dimensional"));
        assert_eq!(load_file(&ours, 0).unwrap().meta.model_version, 2);
    }
}
