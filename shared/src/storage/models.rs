//! Model files: immutable checkpoints named by their blake3 and the `current` pointer.
//!
//! `models/<blake3>.ckpt` holds a predictor checkpoint (weights for serving);
//! `models/<blake3>.adam` optionally holds the matching full checkpoint with the
//! optimizer state, for continued training. `models/current` contains the hash
//! of the serving checkpoint. Every file is written to a temporary name,
//! fsynced, renamed and the directory fsynced, so a reader never sees a partial
//! file and a crash leaves either the old pointer or the new one.

use std::fs;
use std::path::PathBuf;

use predictor::checkpoint::{self, Checkpoint};
use predictor::model::ModelConfig;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::atomic_write;
use crate::base::paths::Paths;

/// A checkpoint loaded for serving.
#[derive(Clone, Debug)]
pub struct LoadedModel {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// blake3 (hex) of the file, which is also its name.
    pub hash: String,
}

fn checkpoint_path(paths: &Paths, hash: &str) -> PathBuf {
    paths.models().join(format!("{hash}.ckpt"))
}

fn optimizer_path(paths: &Paths, hash: &str) -> PathBuf {
    paths.models().join(format!("{hash}.adam"))
}

/// Writes encoded checkpoint bytes as `models/<blake3>.ckpt`; returns the hash.
pub fn write_checkpoint(paths: &Paths, bytes: &[u8]) -> Result<String> {
    let hash = blake3::hash(bytes).to_hex().to_string();
    let path = checkpoint_path(paths, &hash);
    if !path.exists() {
        atomic_write(&path, bytes).ctx("write checkpoint", &path)?;
    }
    Ok(hash)
}

/// Writes the full (optimizer-carrying) checkpoint next to serving checkpoint `hash`.
pub fn write_optimizer(paths: &Paths, hash: &str, bytes: &[u8]) -> Result<()> {
    let path = optimizer_path(paths, hash);
    atomic_write(&path, bytes).ctx("write optimizer state", &path)
}

/// Makes checkpoint `hash` the serving one.
pub fn promote(paths: &Paths, hash: &str) -> Result<()> {
    if !checkpoint_path(paths, hash).exists() {
        return Err(Error::InvalidInput(format!("no checkpoint {hash} to promote")));
    }
    let pointer = paths.current_model();
    atomic_write(&pointer, format!("{hash}\n").as_bytes()).ctx("write", &pointer)
}

/// The hash named by `models/current`, if any.
pub fn current_hash(paths: &Paths) -> Result<Option<String>> {
    let pointer = paths.current_model();
    match fs::read_to_string(&pointer) {
        Ok(text) => {
            let hash = text.trim();
            if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(Some(hash.to_owned()))
            } else {
                Err(Error::corrupt(&pointer, 0, "does not hold a checkpoint hash"))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", &pointer, e)),
    }
}

/// Loads checkpoint `hash`, verifying that the file matches its name and, if
/// `expected` is given, that its config matches.
pub fn load(paths: &Paths, hash: &str, expected: Option<&ModelConfig>) -> Result<LoadedModel> {
    let path = checkpoint_path(paths, hash);
    let bytes = fs::read(&path).ctx("read checkpoint", &path)?;
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(Error::corrupt(&path, 0, "checkpoint content does not match the blake3 in its name"));
    }
    let checkpoint =
        checkpoint::decode(&bytes, expected).map_err(|e| Error::corrupt(&path, 0, format!("checkpoint: {e}")))?;
    Ok(LoadedModel { checkpoint, hash: hash.to_owned() })
}

/// Loads the full checkpoint (with optimizer state) stored next to `hash`, if any.
pub fn load_optimizer(paths: &Paths, hash: &str, expected: Option<&ModelConfig>) -> Result<Option<Checkpoint>> {
    let path = optimizer_path(paths, hash);
    match fs::read(&path) {
        Ok(bytes) => checkpoint::decode(&bytes, expected)
            .map(Some)
            .map_err(|e| Error::corrupt(&path, 0, format!("checkpoint: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", &path, e)),
    }
}

/// Loads the serving checkpoint, if one was promoted.
pub fn load_current(paths: &Paths, expected: Option<&ModelConfig>) -> Result<Option<LoadedModel>> {
    match current_hash(paths)? {
        Some(hash) => load(paths, &hash, expected).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use predictor::checkpoint::{Flags, TrainingMeta};
    use predictor::model::Model;

    fn tiny() -> Checkpoint {
        let config = ModelConfig { native_dim: 0, dim: 8, value_dim: 4, hash_buckets: 64, ..ModelConfig::default() };
        Checkpoint {
            flags: Flags::default(),
            model: Model::new(config, 1).unwrap(),
            optimizer: None,
            meta: TrainingMeta { model_version: 3, ..TrainingMeta::default() },
        }
    }

    #[test]
    fn write_promote_load() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        assert!(load_current(&paths, None).unwrap().is_none());
        let hash = write_checkpoint(&paths, &checkpoint::encode(&tiny())).unwrap();
        promote(&paths, &hash).unwrap();
        let loaded = load_current(&paths, None).unwrap().unwrap();
        assert_eq!(loaded.hash, hash);
        assert_eq!(loaded.checkpoint.meta.model_version, 3);
    }

    #[test]
    fn tampered_checkpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let hash = write_checkpoint(&paths, &checkpoint::encode(&tiny())).unwrap();
        let path = paths.models().join(format!("{hash}.ckpt"));
        let mut bytes = fs::read(&path).unwrap();
        bytes[100] ^= 1;
        fs::write(&path, bytes).unwrap();
        let err = load(&paths, &hash, None).unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn promoting_an_unknown_checkpoint_fails() {
        let dir = tempfile::tempdir().unwrap();
        assert!(promote(&Paths::at(dir.path()), &"0".repeat(64)).is_err());
    }
}
