//! Topic diversity after fusion: near-duplicates of already selected memories are attenuated.

use crate::fusion::order_by_score;

/// Parameters of the diversity pass (seed 002 defaults: 0.85, 0.5, 0.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiversityParams {
    /// Similarity strictly above which two memories overlap.
    pub threshold: f32,
    /// Decay per overlap.
    pub decay: f32,
    /// Share of the score never removed.
    pub floor: f32,
}

impl Default for DiversityParams {
    fn default() -> Self {
        DiversityParams { threshold: 0.85, decay: 0.5, floor: 0.1 }
    }
}

/// Visits candidates by descending `scores` (ties by index). For each, counts the
/// already-visited candidates `j` with `similarity(i, j) > threshold` and multiplies
/// its score by `(1 − floor)·decay^overlaps + floor`. Returns the adjusted scores in the
/// input order (re-rank them with [`crate::fusion::ranks_from_scores`]).
///
/// `similarity` is the caller's (cosine of embeddings, of text vectors, …).
pub fn apply(scores: &[f32], similarity: impl Fn(usize, usize) -> f32, params: &DiversityParams) -> Vec<f32> {
    let mut out = scores.to_vec();
    let mut selected: Vec<usize> = Vec::with_capacity(scores.len());
    for i in order_by_score(scores) {
        let overlaps = selected.iter().filter(|&&j| similarity(i, j) > params.threshold).count();
        if overlaps > 0 {
            let e = i32::try_from(overlaps).unwrap_or(i32::MAX);
            out[i] *= (1.0 - params.floor) * params.decay.powi(e) + params.floor;
        }
        selected.push(i);
    }
    out
}

/// Cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 { 0.0 } else { ab / (aa.sqrt() * bb.sqrt()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_attenuated_as_the_seed_says() {
        // Items 0, 1, 2 are the same topic; 3 is different.
        let topic = [0, 0, 0, 1];
        let sim = |i: usize, j: usize| if topic[i] == topic[j] { 0.9 } else { 0.1 };
        let s = apply(&[1.0, 0.9, 0.8, 0.7], sim, &DiversityParams::default());
        assert_eq!(s[0], 1.0);
        assert!((s[1] - 0.9 * 0.55).abs() < 1e-6);
        assert!((s[2] - 0.8 * 0.325).abs() < 1e-6);
        assert_eq!(s[3], 0.7);
        // Exactly at the threshold is not an overlap.
        let s = apply(&[1.0, 0.5], |_, _| 0.85, &DiversityParams::default());
        assert_eq!(s, vec![1.0, 0.5]);
    }

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-7);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 2.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    }
}
