//! Exploration sampling: occasionally inject the candidate on which baseline and predictor disagree most.

/// Default exploration rate (seed 002: about one session in 20).
pub const DEFAULT_RATE: f32 = 0.05;

/// An exploration swap: take `remove` out of the injected set and put `add` in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swap {
    /// Index of the injected candidate with the lowest fused score.
    pub remove: usize,
    /// Index of the non-injected candidate with the largest `|r_b − r_p|`.
    pub add: usize,
}

/// Pure exploration pick. `draw` is the caller's uniform draw in `[0, 1)`; nothing
/// happens unless `draw < rate`. Then the non-injected candidate with the largest
/// rank disagreement `|rank_baseline − rank_predictor|` (ties: lower index) replaces
/// the injected candidate with the lowest fused score (ties: higher index, i.e. the
/// later one). `None` when nothing is injected, everything is injected, or the
/// slices differ in length.
pub fn pick(
    injected: &[bool],
    fused: &[f32],
    rank_baseline: &[u32],
    rank_predictor: &[u32],
    rate: f32,
    draw: f32,
) -> Option<Swap> {
    let n = injected.len();
    if draw >= rate || fused.len() != n || rank_baseline.len() != n || rank_predictor.len() != n {
        return None;
    }
    let add = (0..n).filter(|&i| !injected[i]).max_by(|&a, &b| {
        let da = rank_baseline[a].abs_diff(rank_predictor[a]);
        let db = rank_baseline[b].abs_diff(rank_predictor[b]);
        da.cmp(&db).then(b.cmp(&a))
    })?;
    let remove = (0..n).filter(|&i| injected[i]).min_by(|&a, &b| fused[a].total_cmp(&fused[b]).then(b.cmp(&a)))?;
    Some(Swap { remove, add })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_disagreement_and_the_weakest_injected() {
        let injected = [true, true, false, false, false];
        let fused = [0.5, 0.2, 0.1, 0.1, 0.1];
        let rb = [1, 2, 3, 4, 5];
        let rp = [2, 1, 5, 3, 1];
        assert_eq!(pick(&injected, &fused, &rb, &rp, DEFAULT_RATE, 0.01), Some(Swap { remove: 1, add: 4 }));
        assert_eq!(pick(&injected, &fused, &rb, &rp, DEFAULT_RATE, 0.05), None);
        // Ties in disagreement go to the lower index.
        let rp = [2, 1, 1, 2, 5];
        assert_eq!(pick(&injected, &fused, &rb, &rp, DEFAULT_RATE, 0.0), Some(Swap { remove: 1, add: 2 }));
        assert_eq!(pick(&[true, true], &[1.0, 0.5], &[1, 2], &[2, 1], 1.0, 0.0), None);
        assert_eq!(pick(&[false], &[1.0], &[1], &[1], 1.0, 0.0), None);
    }
}
