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
//!
//! **Two formats.** The weights are Engram's model, or a Signet `SGPT` v1
//! checkpoint given with `--checkpoint`, served as it is with Signet's own
//! forward pass ([`Weights::Signet`]). [`save`] never overwrites a file that
//! holds the other format (or anything else that is not ours): it writes
//! beside it, `<path>.engram` or `<path>.sgpt`, and [`load_checkpoint`] serves
//! the newest of `<path>` and those two. So a user can switch from Signet's
//! sidecar to Engram's and back and lose neither side's weights.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use predictor::signet::{SignetModel, decode_sgpt, encode_sgpt};
use predictor::train::AdamState;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::models;

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

/// The weights themselves, in one of the two architectures.
#[derive(Clone, Debug)]
pub enum Weights {
    /// Engram's model.
    Engram(Model),
    /// Signet's model, read from an `SGPT` v1 file and scored exactly as its
    /// sidecar scores (`predictor::signet`).
    Signet(Arc<SignetModel>),
}

/// A checkpoint file's format, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Engram's (`ENGRMPRD`).
    Engram,
    /// Signet's `SGPT`.
    Sgpt,
    /// Anything else (including a file too short to tell).
    Other,
}

impl Format {
    /// The format of `bytes`.
    pub fn of(bytes: &[u8]) -> Format {
        if bytes.starts_with(&checkpoint::MAGIC) {
            Format::Engram
        } else if bytes.starts_with(b"SGPT") {
            Format::Sgpt
        } else {
            Format::Other
        }
    }

    /// The name `status` reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Engram => "engram",
            Format::Sgpt => "signet-sgpt-v1",
            Format::Other => "unknown",
        }
    }

    /// The suffix of a file written beside one of another format.
    fn suffix(self) -> &'static str {
        match self {
            Format::Sgpt => "sgpt",
            _ => "engram",
        }
    }
}

/// One immutable set of serving weights with what `status` reports about them.
#[derive(Clone, Debug)]
pub struct Serving {
    /// The weights.
    pub weights: Weights,
    /// Adam state matching them, when known (kept in saved checkpoints).
    pub optimizer: Option<AdamState>,
    /// Model version (persisted in checkpoints; +1 per published training).
    pub version: u64,
    /// Trained, or loaded from a checkpoint.
    pub trained: bool,
    /// Lists trained on over the weights' life (kept in Engram checkpoints).
    pub trained_lists: u64,
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
            weights: Weights::Engram(Model::new(config, INIT_SEED)?),
            optimizer: None,
            version: 1,
            trained: false,
            trained_lists: 0,
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
            weights: Weights::Engram(ckpt.model),
            optimizer: ckpt.optimizer,
            version: meta.model_version.max(1),
            trained: true,
            trained_lists: meta.trained_lists,
            steps: meta.steps,
            last_trained_ms: (meta.timestamp_ms > 0).then_some(meta.timestamp_ms),
            origin,
            generation: 0,
        }
    }

    /// Signet's weights from an `SGPT` file. They count as trained (Signet
    /// writes the file after training; its own sidecar reports `false` after
    /// loading, so its daemon never scores with them until it retrains), at
    /// version 1 (the file has none; Signet reports its format version, 1),
    /// last trained when the file was written.
    pub fn from_sgpt(model: SignetModel, origin: Origin, written_ms: Option<i64>) -> Serving {
        Serving {
            weights: Weights::Signet(Arc::new(model)),
            optimizer: None,
            version: 1,
            trained: true,
            trained_lists: 0,
            steps: 0,
            last_trained_ms: written_ms,
            origin,
            generation: 0,
        }
    }

    /// Engram's model, when the weights are Engram's.
    pub fn engram(&self) -> Option<&Model> {
        match &self.weights {
            Weights::Engram(m) => Some(m),
            Weights::Signet(_) => None,
        }
    }

    /// The embedding size the weights use (0 = text only).
    pub fn native_dim(&self) -> usize {
        match &self.weights {
            Weights::Engram(m) => m.config().native_dim,
            Weights::Signet(m) => m.config.native_dim,
        }
    }

    /// The format [`save`] writes these weights in.
    pub fn format(&self) -> Format {
        match &self.weights {
            Weights::Engram(_) => Format::Engram,
            Weights::Signet(_) => Format::Sgpt,
        }
    }

    /// The checkpoint to save (weights, optimizer state, metadata), for Engram's weights.
    pub fn to_checkpoint(&self, model: &Model, flags: Flags) -> Checkpoint {
        Checkpoint {
            flags,
            model: model.clone(),
            optimizer: self.optimizer.clone(),
            meta: TrainingMeta {
                model_version: self.version,
                steps: self.steps,
                trained_lists: self.trained_lists,
                timestamp_ms: self.last_trained_ms.unwrap_or(0),
                notes: format!("engram-scorer {}", env!("CARGO_PKG_VERSION")),
            },
        }
    }

    /// The file bytes of these weights in their own format; `signet_flags` is
    /// the caller's flags word (bit 0 pretrained base, bit 1 fine-tuned).
    pub fn encode(&self, signet_flags: u32) -> Vec<u8> {
        match &self.weights {
            Weights::Engram(m) => {
                checkpoint::encode(&self.to_checkpoint(
                    m,
                    Flags { pretrained_base: signet_flags & 1 != 0, fine_tuned: signet_flags & 2 != 0 },
                ))
            }
            Weights::Signet(m) => {
                let mut m = (**m).clone();
                m.flags = signet_flags;
                encode_sgpt(&m)
            }
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

/// Loads the weights of one file (`--checkpoint`), in either format: an
/// Engram checkpoint (checksum verified) or a Signet `SGPT` v1 file, whose
/// embedding size must be `native_dim`.
pub fn load_file(path: &Path, native_dim: usize) -> Result<Serving> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read checkpoint", path, e))?;
    let origin = Origin::Checkpoint(path.to_path_buf());
    let (serving, found) = match Format::of(&bytes) {
        Format::Sgpt => {
            let model = decode_sgpt(&bytes)?;
            let found = model.config.native_dim;
            (Serving::from_sgpt(model, origin, modified_ms(path)), found)
        }
        _ => {
            let ckpt = checkpoint::decode(&bytes, None)?;
            let found = ckpt.model.config().native_dim;
            (Serving::from_checkpoint(ckpt, origin), found)
        }
    };
    if found != native_dim {
        return Err(Error::params(
            "checkpoint",
            format!("{} holds weights for {found}-dimensional embeddings, not {native_dim}", path.display()),
        ));
    }
    Ok(serving)
}

fn modified_ms(path: &Path) -> Option<i64> {
    let t = std::fs::metadata(path).ok()?.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// The file written beside `path` for weights of `format`.
pub fn beside(path: &Path, format: Format) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(format.suffix());
    PathBuf::from(name)
}

/// The files `--checkpoint path` may name, newest first: `path` itself and
/// what [`save`] writes beside it (ties keep that order).
pub fn checkpoint_files(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(PathBuf, i64)> = [path.to_path_buf(), beside(path, Format::Engram), beside(path, Format::Sgpt)]
        .into_iter()
        .filter_map(|p| {
            let meta = std::fs::metadata(&p).ok().filter(|m| m.is_file() && m.len() > 0)?;
            let ms = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
            Some((p, i64::try_from(ms).unwrap_or(i64::MAX)))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    files.into_iter().map(|(p, _)| p).collect()
}

/// Serves `--checkpoint path`: the newest loadable of [`checkpoint_files`];
/// `None` when there is none (each failure is logged).
pub fn load_checkpoint(path: &Path, native_dim: usize) -> Option<Serving> {
    for file in checkpoint_files(path) {
        match load_file(&file, native_dim) {
            Ok(s) => return Some(s),
            Err(e) => tracing::warn!(file = %file.display(), error = %e, "this checkpoint cannot be served"),
        }
    }
    None
}

/// Where [`save`] writes weights of `format` asked for at `path`: `path`
/// itself when it is absent, empty or already holds that format; otherwise
/// beside it, so that a file of another format (Signet's `SGPT` at its
/// daemon's `model.bin`, say) is never overwritten.
pub fn save_target(path: &Path, format: Format) -> PathBuf {
    use std::io::Read as _;
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    if n == 0 || Format::of(&head[..n]) == format { path.to_path_buf() } else { beside(path, format) }
}

/// Where a client (`save_checkpoint`, `train_from_db`'s `checkpoint_path`)
/// may have weights written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// The path asked for.
    pub path: PathBuf,
    /// Its directory is missing and inside the data home's models
    /// directory, the one place directories are made.
    pub create_dir: bool,
}

/// Checks a checkpoint path a client names: absolute (a relative one would
/// land in the sidecar's working directory), without `..`, in a directory
/// that exists, or else inside the data home's models directory (made when
/// missing). No directory is ever made anywhere else. `Err` says why not.
pub fn destination(given: &str, home: Option<&Paths>) -> std::result::Result<Destination, String> {
    if given.is_empty() {
        return Err("must not be empty".into());
    }
    let path = PathBuf::from(given);
    if !path.is_absolute() {
        return Err(format!("{given:?} is relative: give an absolute path (its directory must exist)"));
    }
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("{given:?} holds `..`: give the path itself"));
    }
    if path.file_name().is_none() {
        return Err(format!("{given:?} names no file"));
    }
    let dir = shared::base::fsutil::parent_dir(&path);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => return Ok(Destination { path, create_dir: false }),
        Ok(_) => return Err(format!("{} is not a directory", dir.display())),
        Err(_) => {}
    }
    if let Some(models) = home.map(Paths::models)
        && path.starts_with(&models)
    {
        return Ok(Destination { path, create_dir: true });
    }
    Err(format!(
        "the directory {} does not exist; no directory is made outside the data home's models directory{}",
        dir.display(),
        home.map(|h| format!(" ({})", h.models().display())).unwrap_or_default()
    ))
}

/// What [`save`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// The file written (`path`, or the file beside it).
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
}

impl Destination {
    /// Makes its directory when [`destination`] allowed it.
    pub fn prepare(&self) -> Result<()> {
        if self.create_dir {
            let dir = shared::base::fsutil::parent_dir(&self.path);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        }
        Ok(())
    }
}

/// Writes `serving` in its own format at [`save_target`]`(path)`,
/// atomically (temporary file in the same directory, fsync, rename,
/// directory fsync). The directory must exist ([`Destination::prepare`]).
pub fn save(serving: &Serving, path: &Path, signet_flags: u32) -> Result<Saved> {
    let bytes = serving.encode(signet_flags);
    let target = save_target(path, serving.format());
    if target != path {
        tracing::info!(
            asked = %path.display(), written = %target.display(),
            "the file holds another format: kept, and the weights written beside it"
        );
    }
    shared::base::fsutil::atomic_write_in_place(&target, &bytes)
        .map_err(|e| Error::io("write checkpoint", &target, e))?;
    Ok(Saved { path: target, bytes: bytes.len() as u64 })
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
        assert_eq!((s.version, s.trained, s.trained_lists), (3, true, 7));
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
    fn sgpt_files_load_and_mismatched_ones_are_refused_by_name() {
        use predictor::signet::{SignetConfig, SignetModel};
        let dir = tempfile::tempdir().unwrap();
        let sgpt = dir.path().join("model.bin");
        std::fs::write(&sgpt, b"SGPT\x01\x00\x00\x00").unwrap();
        assert!(load_file(&sgpt, 768).unwrap_err().to_string().contains("SGPT"), "a truncated SGPT file");
        let m = SignetModel::seeded(SignetConfig { hash_buckets: 64, ..SignetConfig::with_native_dim(8) }, 3);
        std::fs::write(&sgpt, encode_sgpt(&m)).unwrap();
        let s = load_file(&sgpt, 8).unwrap();
        assert!(s.trained && s.version == 1 && s.engram().is_none() && s.format() == Format::Sgpt);
        assert!(load_file(&sgpt, 768).unwrap_err().to_string().contains("8-dimensional"));
        let ours = dir.path().join("ours.ckpt");
        std::fs::write(&ours, tiny_checkpoint(2)).unwrap();
        assert!(load_file(&ours, 768).unwrap_err().to_string().contains("0-dimensional"));
        assert_eq!(load_file(&ours, 0).unwrap().version, 2);
    }

    #[test]
    fn saving_never_overwrites_a_file_of_another_format() {
        use predictor::signet::{SignetConfig, SignetModel};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.bin");
        let signet = SignetModel::seeded(SignetConfig { hash_buckets: 64, ..SignetConfig::with_native_dim(4) }, 9);
        let signet_bytes = encode_sgpt(&signet);
        std::fs::write(&path, &signet_bytes).unwrap();
        // Engram weights asked to go to Signet's file: written beside it.
        let engram = Serving::fresh(4).unwrap();
        let saved = save(&engram, &path, 0).unwrap();
        assert_eq!(saved.path, beside(&path, Format::Engram));
        assert_eq!(std::fs::read(&path).unwrap(), signet_bytes, "Signet's file is untouched");
        // Saved again: the Engram file beside it is replaced, Signet's still kept.
        assert_eq!(save(&engram, &path, 2).unwrap().path, beside(&path, Format::Engram));
        assert_eq!(std::fs::read(&path).unwrap(), signet_bytes);
        // Signet weights go to Signet's file (same format) …
        let served = load_file(&path, 4).unwrap();
        assert_eq!(save(&served, &path, 0).unwrap().path, path);
        assert_eq!(std::fs::read(&path).unwrap(), signet_bytes, "same weights, same bytes");
        // … and beside an Engram file, never over it.
        let other = dir.path().join("engram.ckpt");
        save(&engram, &other, 0).unwrap();
        let before = std::fs::read(&other).unwrap();
        assert_eq!(save(&served, &other, 0).unwrap().path, beside(&other, Format::Sgpt));
        assert_eq!(std::fs::read(&other).unwrap(), before);
        // A file that is neither is kept too.
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "mine").unwrap();
        assert_eq!(save(&engram, &notes, 0).unwrap().path, beside(&notes, Format::Engram));
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    }

    #[test]
    fn the_newest_of_a_checkpoint_and_the_files_beside_it_serves() {
        use predictor::signet::{SignetConfig, SignetModel};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.bin");
        assert!(load_checkpoint(&path, 4).is_none());
        let signet = SignetModel::seeded(SignetConfig { hash_buckets: 64, ..SignetConfig::with_native_dim(4) }, 9);
        std::fs::write(&path, encode_sgpt(&signet)).unwrap();
        assert_eq!(load_checkpoint(&path, 4).unwrap().format(), Format::Sgpt);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut trained = Serving::fresh(4).unwrap();
        trained.version = 5;
        save(&trained, &path, 0).unwrap();
        let s = load_checkpoint(&path, 4).unwrap();
        assert_eq!((s.format(), s.version), (Format::Engram, 5), "Engram's later weights beside it serve");
        // Signet trained again afterwards and rewrote its file: its weights are the newest.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, encode_sgpt(&signet)).unwrap();
        assert_eq!(load_checkpoint(&path, 4).unwrap().format(), Format::Sgpt);
        // A damaged newest file falls back to the next one.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, b"SGPT garbage").unwrap();
        assert_eq!(load_checkpoint(&path, 4).unwrap().format(), Format::Engram);
    }
}
