//! Finite-difference checks of every op, and the sparse-gradient and inference-tape contracts.

use super::*;
use crate::test_util::{check_gradients, config, mat};
use proptest::prelude::*;

const H: f32 = 1e-2;

/// Reduces `out` to a scalar with fixed random weights `r` (an input), so every output entry matters.
fn weighted(t: &mut Tape<'_>, out: Var, r: &Mat) -> Var {
    let rv = t.input(r.clone());
    t.dot(out, rv)
}

proptest! {
    #![proptest_config(config(48))]

    /// Sizes above 5 reach matrixmultiply (nalgebra multiplies smaller ones itself),
    /// including its strided read of `Bᵀ` in the backward pass.
    #[test]
    fn matmul_and_matvec(
        (a, b, r) in (1usize..9, 1usize..9, 1usize..9)
            .prop_flat_map(|(m, k, n)| (mat(m, k), mat(k, n), mat(m, n)))
    ) {
        let f = move |t: &mut Tape<'_>| {
            let (a, b) = (t.param(ParamId(0)), t.param(ParamId(1)));
            let c = t.matmul(a, b);
            weighted(t, c, &r)
        };
        check_gradients(&[a, b], &f, H, 64)?;
    }

    #[test]
    fn transpose_add_scale(
        (a, b, r) in (1usize..6, 1usize..6).prop_flat_map(|(m, n)| (mat(m, n), mat(n, m), mat(n, m))),
        c in -3.0f32..3.0,
    ) {
        let f = move |t: &mut Tape<'_>| {
            let (a, b) = (t.param(ParamId(0)), t.param(ParamId(1)));
            let at = t.transpose(a);
            let s = t.scale(at, c);
            let sum = t.add(s, b);
            weighted(t, sum, &r)
        };
        check_gradients(&[a, b], &f, H, 64)?;
    }

    #[test]
    fn sigmoid_gradient((a, r) in (1usize..6, 1usize..6).prop_flat_map(|(m, n)| (mat(m, n), mat(m, n)))) {
        let f = move |t: &mut Tape<'_>| {
            let a = t.param(ParamId(0));
            let s = t.sigmoid(a);
            weighted(t, s, &r)
        };
        check_gradients(&[a], &f, H, 64)?;
    }

    #[test]
    fn softmax_gradient((a, r) in (1usize..9).prop_flat_map(|n| (mat(1, n), mat(1, n)))) {
        let f = move |t: &mut Tape<'_>| {
            let a = t.param(ParamId(0));
            let s = t.softmax(a);
            weighted(t, s, &r)
        };
        check_gradients(&[a], &f, H, 64)?;
    }

    #[test]
    fn dot_and_scaled_col_dot(
        (a, b, r) in (1usize..6, 1usize..6).prop_flat_map(|(d, n)| (mat(d, 1), mat(d, n), mat(1, n))),
        scale in 0.1f32..2.0,
    ) {
        let f = move |t: &mut Tape<'_>| {
            let (a, b) = (t.param(ParamId(0)), t.param(ParamId(1)));
            let c = t.col_dot(a, b, scale);
            weighted(t, c, &r)
        };
        check_gradients(&[a.clone(), b], &f, H, 64)?;
        let g = move |t: &mut Tape<'_>| {
            let a = t.param(ParamId(0));
            let a2 = t.scale(a, 0.5);
            t.dot(a, a2)
        };
        check_gradients(&[a], &g, H, 64)?;
    }

    #[test]
    fn layer_norm_gradient(
        (x, gain, bias, r) in (2usize..7, 1usize..5)
            .prop_flat_map(|(d, n)| (mat(d, n), mat(d, 1), mat(d, 1), mat(d, n)))
    ) {
        // Nearly constant columns have a huge curvature; finite differences are meaningless there.
        for j in 0..x.ncols() {
            let c = x.column(j);
            let mean = c.mean();
            let var = c.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / c.len() as f32;
            prop_assume!(var > 0.2);
        }
        let f = move |t: &mut Tape<'_>| {
            let (x, g, b) = (t.param(ParamId(0)), t.param(ParamId(1)), t.param(ParamId(2)));
            let y = t.layer_norm(x, g, b);
            weighted(t, y, &r)
        };
        check_gradients(&[x, gain, bias], &f, 5e-3, 64)?;
    }

    #[test]
    fn embedding_bag_gradient(
        (table, bags, r) in (1usize..5, 2usize..9, 1usize..5).prop_flat_map(|(rows, buckets, n)| (
            mat(rows, buckets),
            prop::collection::vec(
                prop::collection::vec((0..buckets as u32, -1.5f32..1.5), 0..5), n),
            mat(rows, n),
        ))
    ) {
        let f = move |t: &mut Tape<'_>| {
            let e = t.embedding_bag(ParamId(0), bags.clone());
            weighted(t, e, &r)
        };
        check_gradients(&[table], &f, H, 64)?;
    }

    #[test]
    fn mean_pool_and_concat(
        (x, y, z, groups, r) in (1usize..5, 1usize..5, 1usize..5, 1usize..4).prop_flat_map(|(d, n1, n2, g)| (
            mat(d, n1),
            mat(d, n2),
            mat(2, g),
            prop::collection::vec(prop::collection::vec(0..n1 + n2, 0..4), g),
            mat(d + 2, g),
        ))
    ) {
        let f = move |t: &mut Tape<'_>| {
            let (x, y, z) = (t.param(ParamId(0)), t.param(ParamId(1)), t.param(ParamId(2)));
            let xy = t.concat_cols(x, y);
            let pooled = t.mean_pool(xy, groups.clone());
            let stacked = t.concat_rows(pooled, z);
            weighted(t, stacked, &r)
        };
        check_gradients(&[x, y, z], &f, H, 64)?;
    }

    #[test]
    fn rows_gradient(
        (a, start, len, r) in (1usize..6, 1usize..4)
            .prop_flat_map(|(m, n)| (Just(m), Just(n), 0..m))
            .prop_flat_map(|(m, n, start)| (mat(m, n), Just(start), 1..=m - start, Just(n)))
            .prop_flat_map(|(a, start, len, n)| (Just(a), Just(start), Just(len), mat(len, n)))
    ) {
        let f = move |t: &mut Tape<'_>| {
            let a = t.param(ParamId(0));
            let s = t.rows(a, start, len);
            weighted(t, s, &r)
        };
        check_gradients(&[a], &f, H, 64)?;
    }

    #[test]
    fn cols_gradient(
        (a, start, len, r) in (1usize..4, 1usize..6)
            .prop_flat_map(|(m, n)| (Just(m), Just(n), 0..n))
            .prop_flat_map(|(m, n, start)| (mat(m, n), Just(start), 1..=n - start, Just(m)))
            .prop_flat_map(|(a, start, len, m)| (Just(a), Just(start), Just(len), mat(m, len)))
    ) {
        let f = move |t: &mut Tape<'_>| {
            let a = t.param(ParamId(0));
            let s = t.cols(a, start, len);
            weighted(t, s, &r)
        };
        check_gradients(&[a], &f, H, 64)?;
    }

    #[test]
    fn listnet_gradient(
        (z, labels) in (2usize..9).prop_flat_map(|n| (mat(1, n), prop::collection::vec(-0.5f32..1.0, n))),
        temperature in 0.3f32..1.0,
        weight in 0.2f32..2.0,
    ) {
        let f = move |t: &mut Tape<'_>| {
            let z = t.param(ParamId(0));
            t.listnet_loss(z, &labels, temperature, weight)
        };
        check_gradients(&[z], &f, 3e-3, 64)?;
    }

    #[test]
    fn listnet_is_kl_and_nonnegative(
        (z, labels) in (2usize..9).prop_flat_map(|n| (mat(1, n), prop::collection::vec(-0.5f32..1.0, n))),
        temperature in 0.3f32..1.0,
    ) {
        let params = [z.clone()];
        let mut t = Tape::inference(&params);
        let zv = t.param(ParamId(0));
        let l = t.listnet_loss(zv, &labels, temperature, 1.0);
        let loss = t.value(l)[(0, 0)];
        prop_assert!(loss >= -1e-5, "KL must be >= 0, got {loss}");
        // Naive reference: Σ p_true·ln(p_true / p_pred).
        let pt = softmax_slice(&labels, 1.0 / temperature);
        let pp = softmax_slice(z.as_slice(), 1.0);
        let naive: f32 = pt.iter().zip(&pp).map(|(a, b)| a * (a / b).ln()).sum();
        prop_assert!((naive - loss).abs() < 1e-3 * (1.0 + naive.abs()), "{naive} vs {loss}");
        // The loss of logits equal to labels / T is zero (the temperature sharpens the target only).
        let scaled: Vec<f32> = labels.iter().map(|l| l / temperature).collect();
        let lbl = Mat::from_row_slice(1, labels.len(), &scaled);
        let p2 = [lbl];
        let mut t2 = Tape::inference(&p2);
        let lv = t2.param(ParamId(0));
        let l2 = t2.listnet_loss(lv, &labels, temperature, 1.0);
        prop_assert!(t2.value(l2)[(0, 0)].abs() < 1e-5);
    }
}

#[test]
fn embedding_bag_gradient_is_sparse() {
    let table = Mat::from_fn(3, 1000, |i, j| (i * 7 + j) as f32 * 0.001);
    let params = [table];
    let mut t = Tape::new(&params);
    let e = t.embedding_bag(ParamId(0), vec![vec![(5, 0.5), (900, 0.5)], vec![(5, 1.0)], vec![]]);
    let r = t.input(Mat::from_element(3, 3, 1.0));
    let l = t.dot(e, r);
    let g = t.backward(l);
    match &g.grads[0] {
        Some(Grad::Sparse(s)) => {
            assert_eq!(s.cols, vec![5, 900]);
            assert_eq!(s.values.shape(), (3, 2));
            assert!(s.values.column(0).iter().all(|&v| (v - 1.5).abs() < 1e-6));
            assert!(s.values.column(1).iter().all(|&v| (v - 0.5).abs() < 1e-6));
        }
        other => panic!("expected a sparse gradient, got {other:?}"),
    }
}

#[test]
fn inference_tape_gives_the_same_values() {
    let params = [
        Mat::from_fn(4, 3, |i, j| (i as f32 - j as f32) * 0.3),
        Mat::from_element(4, 1, 1.2),
        Mat::from_element(4, 1, -0.1),
    ];
    let build = |t: &mut Tape<'_>| {
        let x = t.param(ParamId(0));
        let (g, b) = (t.param(ParamId(1)), t.param(ParamId(2)));
        let y = t.layer_norm(x, g, b);
        let s = t.sigmoid(y);
        let q = t.input(Mat::from_element(4, 1, 0.5));
        let z = t.col_dot(q, s, 0.5);
        t.softmax(z)
    };
    let mut a = Tape::new(&params);
    let va = build(&mut a);
    let mut b = Tape::inference(&params);
    let vb = build(&mut b);
    assert!(!b.is_recording());
    assert_eq!(a.value(va), b.value(vb));
}

#[test]
fn gradients_accumulate_sparse_and_dense() {
    let s1 = SparseGrad { cols: vec![1, 4], values: Mat::from_element(2, 2, 1.0) };
    let s2 = SparseGrad { cols: vec![0, 4], values: Mat::from_element(2, 2, 2.0) };
    let mut g = Gradients { grads: vec![Some(Grad::Sparse(s1))] };
    let other = Gradients { grads: vec![Some(Grad::Sparse(s2))] };
    g.add_scaled(&other, 0.5);
    let mut h = g.clone();
    h.add(Gradients::empty(1));
    assert_eq!(h, g);
    let d = g.dense(ParamId(0), (2, 5));
    assert_eq!(d.row(0).iter().copied().collect::<Vec<_>>(), vec![1.0, 1.0, 0.0, 0.0, 2.0]);
    match &g.grads[0] {
        Some(Grad::Sparse(s)) => assert_eq!(s.cols, vec![0, 1, 4]),
        other => panic!("expected sparse, got {other:?}"),
    }
    assert!((g.norm() - (2.0f32 * (1.0 + 1.0 + 4.0)).sqrt()).abs() < 1e-5);
}

/// Layer norm sums several columns side by side; every column must still get
/// exactly the bits it gets alone, on a recording and on an inference tape.
#[test]
fn layer_norm_of_many_columns_is_column_by_column() {
    let (d, n) = (13, 21);
    let x = Mat::from_fn(d, n, |i, j| ((i * 31 + j * 17) % 23) as f32 * 0.37 - 3.0 + j as f32);
    let gain = Mat::from_fn(d, 1, |i, _| 0.5 + i as f32 * 0.1);
    let bias = Mat::from_fn(d, 1, |i, _| i as f32 * -0.05);
    let norm = |t: &mut Tape<'_>| {
        let (x, g, b) = (t.param(ParamId(0)), t.param(ParamId(1)), t.param(ParamId(2)));
        t.layer_norm(x, g, b)
    };
    let bits = |m: &Mat| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let params = [x.clone(), gain.clone(), bias.clone()];
    for recording in [true, false] {
        let mut t = if recording { Tape::new(&params) } else { Tape::inference(&params) };
        let y = norm(&mut t);
        for j in 0..n {
            let single = [x.columns(j, 1).into_owned(), gain.clone(), bias.clone()];
            let mut t1 = Tape::inference(&single);
            let y1 = norm(&mut t1);
            assert_eq!(bits(&t.value(y).columns(j, 1).into_owned()), bits(t1.value(y1)), "column {j}");
        }
    }
}
