//! Pure, deterministic ranking brain of Engram: features, model, training, metrics.
