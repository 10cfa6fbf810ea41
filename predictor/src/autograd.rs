//! Reverse-mode autograd: a tape of whole-tensor ops on nalgebra f32 matrices, each op's forward and backward side by side.
//!
//! A [`Tape`] borrows the parameter tensors (`&[Mat]`, indexed by
//! [`ParamId`]) and records, in evaluation order, one node per operation.
//! [`Tape::backward`] walks the nodes once in reverse and returns the
//! parameter [`Gradients`]. Embedding tables read through
//! [`Tape::embedding_bag`] get *sparse* gradients: only the columns (buckets)
//! that were touched, so a step never costs `buckets × d`.
//!
//! Inference uses the very same methods on a tape made by
//! [`Tape::inference`]: the forward code is identical, but no op record or
//! saved tensor is kept and `backward` is unavailable.
//!
//! Conventions: a vector is a column (`d × 1`); a batch of `n` vectors is a
//! `d × n` matrix (one column per item); a list's logits are a `1 × n` row;
//! a scalar is `1 × 1`. Shape mismatches between ops are programming errors
//! and panic with the op's name; inputs from callers are validated by the
//! model before they reach the tape.
//!
//! Every op's forward and backward live in the same place: the forward in the
//! builder method, the backward in one `match` arm of [`Tape::backward`] with
//! the derivative written in a comment. Each is checked against finite
//! differences in the tests.

use nalgebra::{DMatrix, DMatrixView};

/// The tensor type: a column-major f32 matrix.
pub type Mat = DMatrix<f32>;

/// Index of a parameter tensor in the slice a [`Tape`] borrows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParamId(pub usize);

/// Handle of a node (a tensor value) on a [`Tape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var(usize);

/// Epsilon inside the layer-norm square root.
pub const LAYER_NORM_EPS: f32 = 1e-5;

#[derive(Debug)]
enum Val<'p> {
    Borrowed(&'p Mat),
    Owned(Mat),
}

impl Val<'_> {
    fn get(&self) -> &Mat {
        match self {
            Val::Borrowed(m) => m,
            Val::Owned(m) => m,
        }
    }
}

/// One recorded operation, with whatever its backward needs.
#[derive(Debug)]
enum Op {
    Input,
    Param(ParamId),
    MatMul(Var, Var),
    Transpose(Var),
    Add(Var, Var),
    Scale(Var, f32),
    Sigmoid(Var),
    Softmax(Var),
    Dot(Var, Var),
    ColDot { a: Var, b: Var, scale: f32 },
    LayerNorm { x: Var, gain: Var, bias: Var, xhat: Mat, inv_std: Vec<f32> },
    EmbeddingBag { table: ParamId, bags: Vec<Vec<(u32, f32)>> },
    MeanPool { x: Var, groups: Vec<Vec<usize>> },
    ConcatRows(Var, Var),
    ConcatCols(Var, Var),
    Rows { a: Var, start: usize },
    Cols { a: Var, start: usize },
    ListNet { logits: Var, p_pred: Vec<f32>, p_true: Vec<f32>, weight: f32 },
}

/// Sparse gradient of an embedding table: only the touched columns.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseGrad {
    /// Touched column indices, strictly increasing.
    pub cols: Vec<u32>,
    /// `rows × cols.len()` gradient values, column `k` for table column `cols[k]`.
    pub values: Mat,
}

impl SparseGrad {
    fn merge(&self, other: &SparseGrad, scale: f32) -> SparseGrad {
        let rows = self.values.nrows();
        let mut cols = Vec::with_capacity(self.cols.len() + other.cols.len());
        let mut data: Vec<f32> = Vec::with_capacity(rows * (self.cols.len() + other.cols.len()));
        let (mut i, mut j) = (0, 0);
        while i < self.cols.len() || j < other.cols.len() {
            let take_self = j >= other.cols.len() || (i < self.cols.len() && self.cols[i] <= other.cols[j]);
            let take_other = i >= self.cols.len() || (j < other.cols.len() && other.cols[j] <= self.cols[i]);
            let c = if take_self { self.cols[i] } else { other.cols[j] };
            let start = data.len();
            data.resize(start + rows, 0.0);
            if take_self {
                for (d, s) in data[start..].iter_mut().zip(self.values.column(i).iter()) {
                    *d += s;
                }
                i += 1;
            }
            if take_other {
                for (d, s) in data[start..].iter_mut().zip(other.values.column(j).iter()) {
                    *d += scale * s;
                }
                j += 1;
            }
            cols.push(c);
        }
        let n = cols.len();
        SparseGrad { cols, values: Mat::from_vec(rows, n, data) }
    }
}

/// Gradient of one parameter tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Grad {
    /// Full-size gradient.
    Dense(Mat),
    /// Gradient of a table read only through [`Tape::embedding_bag`].
    Sparse(SparseGrad),
}

/// Gradients of all parameters after a backward pass, indexed by [`ParamId`].
///
/// `None` means the parameter did not take part in the computation.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients {
    /// One entry per parameter tensor.
    pub grads: Vec<Option<Grad>>,
}

impl Gradients {
    /// No gradient for any of `n` parameters.
    pub fn empty(n: usize) -> Self {
        Gradients { grads: vec![None; n] }
    }

    /// `self += scale · other` (same parameter count).
    pub fn add_scaled(&mut self, other: &Gradients, scale: f32) {
        assert_eq!(self.grads.len(), other.grads.len(), "Gradients::add_scaled: parameter counts differ");
        for (dst, src) in self.grads.iter_mut().zip(&other.grads) {
            let Some(src) = src else { continue };
            let scaled = match src {
                Grad::Dense(s) => Grad::Dense(s * scale),
                Grad::Sparse(s) => Grad::Sparse(SparseGrad { cols: s.cols.clone(), values: &s.values * scale }),
            };
            add_grad(dst, scaled);
        }
    }

    /// `self += other`, consuming `other` (no copy of dense gradients).
    pub fn add(&mut self, other: Gradients) {
        assert_eq!(self.grads.len(), other.grads.len(), "Gradients::add: parameter counts differ");
        for (dst, src) in self.grads.iter_mut().zip(other.grads) {
            if let Some(src) = src {
                add_grad(dst, src);
            }
        }
    }

    /// Multiplies every gradient by `scale`.
    pub fn scale(&mut self, scale: f32) {
        for g in self.grads.iter_mut().flatten() {
            match g {
                Grad::Dense(d) => *d *= scale,
                Grad::Sparse(s) => s.values *= scale,
            }
        }
    }

    /// Euclidean norm over all gradient entries.
    pub fn norm(&self) -> f32 {
        let mut sum = 0.0f64;
        for g in self.grads.iter().flatten() {
            let m = match g {
                Grad::Dense(d) => d,
                Grad::Sparse(s) => &s.values,
            };
            sum += sum_squares(m.as_slice());
        }
        sum.sqrt() as f32
    }

    /// The gradient of parameter `id` as a full-size matrix of `shape` (zeros when absent).
    pub fn dense(&self, id: ParamId, shape: (usize, usize)) -> Mat {
        match &self.grads[id.0] {
            None => Mat::zeros(shape.0, shape.1),
            Some(Grad::Dense(d)) => d.clone(),
            Some(Grad::Sparse(s)) => {
                let mut full = Mat::zeros(shape.0, shape.1);
                scatter_add(&mut full, s, 1.0);
                full
            }
        }
    }
}

/// `A · B`. A `1 × k` row times a matrix goes through `Bᵀ·Aᵀ` (contiguous dot
/// products per column), which nalgebra's small-matrix path does far better than a
/// strided row; everything else is nalgebra's product (GEMM via matrixmultiply).
fn mat_mul(a: &Mat, b: &Mat) -> Mat {
    if a.nrows() == 1 && b.ncols() > 1 { b.tr_mul(&a.transpose()).transpose() } else { a * b }
}

/// Columns whose statistics [`column_stats`] sums side by side.
const STAT_LANES: usize = 8;

/// Mean and `1 / sqrt(var + ε)` of every column of a column-major `d × n` slice.
///
/// Each column is summed in row order from `-0.0`, exactly as `Iterator::sum`
/// does, so the results are those of one column at a time; summing
/// [`STAT_LANES`] columns side by side only breaks the chain of dependent
/// additions (a lone column is bound by the adder's latency).
fn column_stats(x: &[f32], d: usize) -> (Vec<f32>, Vec<f32>) {
    let n = x.len() / d;
    let inv_d = 1.0 / d as f32;
    let mut means = Vec::with_capacity(n);
    let mut inv_std = Vec::with_capacity(n);
    for block in x.chunks(STAT_LANES * d) {
        if block.len() == STAT_LANES * d {
            let cols: [&[f32]; STAT_LANES] = std::array::from_fn(|c| &block[c * d..(c + 1) * d]);
            let mut sum = [-0.0f32; STAT_LANES];
            for r in 0..d {
                for (s, c) in sum.iter_mut().zip(cols) {
                    *s += c[r];
                }
            }
            let mean = sum.map(|s| s * inv_d);
            let mut sq = [-0.0f32; STAT_LANES];
            for r in 0..d {
                for ((s, c), &m) in sq.iter_mut().zip(cols).zip(&mean) {
                    *s += (c[r] - m) * (c[r] - m);
                }
            }
            means.extend_from_slice(&mean);
            inv_std.extend(sq.iter().map(|&s| 1.0 / (s * inv_d + LAYER_NORM_EPS).sqrt()));
        } else {
            for col in block.chunks_exact(d) {
                let mean = col.iter().sum::<f32>() * inv_d;
                let var = col.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() * inv_d;
                means.push(mean);
                inv_std.push(1.0 / (var + LAYER_NORM_EPS).sqrt());
            }
        }
    }
    (means, inv_std)
}

/// `A · Bᵀ` without forming `Bᵀ`. A row `A` goes through `(B · Aᵀ)ᵀ`, a
/// matrix-vector product over `B`'s contiguous columns; anything else through
/// nalgebra's product with `B` read transposed through strides, which
/// matrixmultiply packs as cheaply as a copy (copying a 768 × 100 `B` first
/// cost more than the product).
fn mat_mul_bt(a: &Mat, b: &Mat) -> Mat {
    if a.nrows() == 1 {
        (b * a.transpose()).transpose()
    } else if b.is_empty() {
        a * b.transpose()
    } else {
        a * DMatrixView::from_slice_with_strides(b.as_slice(), b.ncols(), b.nrows(), b.nrows(), 1)
    }
}

/// Sum of squares with eight independent f32 lanes (so it vectorizes), combined in f64.
fn sum_squares(x: &[f32]) -> f64 {
    let mut lanes = [0.0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l += v * v;
        }
    }
    let mut sum: f64 = lanes.iter().map(|&l| f64::from(l)).sum();
    sum += tail.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
    sum
}

/// `slot += src`, keeping sparse gradients sparse when both are sparse.
fn add_grad(slot: &mut Option<Grad>, src: Grad) {
    *slot = Some(match (slot.take(), src) {
        (None, s) => s,
        (Some(Grad::Dense(mut d)), Grad::Dense(s)) => {
            d += s;
            Grad::Dense(d)
        }
        (Some(Grad::Sparse(d)), Grad::Sparse(s)) => Grad::Sparse(d.merge(&s, 1.0)),
        (Some(Grad::Dense(mut d)), Grad::Sparse(s)) => {
            scatter_add(&mut d, &s, 1.0);
            Grad::Dense(d)
        }
        (Some(Grad::Sparse(d)), Grad::Dense(mut s)) => {
            scatter_add(&mut s, &d, 1.0);
            Grad::Dense(s)
        }
    });
}

fn scatter_add(dst: &mut Mat, s: &SparseGrad, scale: f32) {
    for (k, &c) in s.cols.iter().enumerate() {
        let mut col = dst.column_mut(c as usize);
        col.axpy(scale, &s.values.column(k), 1.0);
    }
}

/// A tape of tensor operations over borrowed parameters.
#[derive(Debug)]
pub struct Tape<'p> {
    params: &'p [Mat],
    values: Vec<Val<'p>>,
    /// `Some` when recording (training); `None` for inference.
    ops: Option<Vec<Op>>,
    needs_grad: Vec<bool>,
}

impl<'p> Tape<'p> {
    /// A recording tape: ops are kept so that [`Tape::backward`] can run.
    pub fn new(params: &'p [Mat]) -> Self {
        Tape { params, values: Vec::new(), ops: Some(Vec::new()), needs_grad: Vec::new() }
    }

    /// A non-recording tape for inference: same forward code, nothing kept for backward.
    pub fn inference(params: &'p [Mat]) -> Self {
        Tape { params, values: Vec::new(), ops: None, needs_grad: Vec::new() }
    }

    /// Whether this tape records ops for a backward pass.
    pub fn is_recording(&self) -> bool {
        self.ops.is_some()
    }

    /// The value of a node.
    pub fn value(&self, v: Var) -> &Mat {
        self.values[v.0].get()
    }

    /// Consumes the tape and returns the value of a node (no copy when it is owned).
    pub fn into_value(mut self, v: Var) -> Mat {
        match self.values.swap_remove(v.0) {
            Val::Owned(m) => m,
            Val::Borrowed(m) => m.clone(),
        }
    }

    fn push(&mut self, value: Val<'p>, op: Op, needs_grad: bool) -> Var {
        self.values.push(value);
        self.needs_grad.push(needs_grad);
        if let Some(ops) = &mut self.ops {
            ops.push(op);
        }
        Var(self.values.len() - 1)
    }

    fn ng(&self, v: Var) -> bool {
        self.needs_grad[v.0]
    }

    /// A constant input (no gradient).
    pub fn input(&mut self, m: Mat) -> Var {
        self.push(Val::Owned(m), Op::Input, false)
    }

    /// A parameter tensor, borrowed (no copy).
    pub fn param(&mut self, id: ParamId) -> Var {
        let p = &self.params[id.0];
        let rec = self.is_recording();
        self.push(Val::Borrowed(p), Op::Param(id), rec)
    }

    /// Matrix product `A · B` (mat-mat, or mat-vec when `B` has one column).
    pub fn matmul(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.ncols(), vb.nrows(), "matmul: inner dimensions differ");
        let out = mat_mul(va, vb);
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::MatMul(a, b), ng)
    }

    /// Transpose `Aᵀ`.
    pub fn transpose(&mut self, a: Var) -> Var {
        let out = self.value(a).transpose();
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Transpose(a), ng)
    }

    /// Element-wise sum `A + B` (same shapes).
    pub fn add(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.shape(), vb.shape(), "add: shapes differ");
        let out = va + vb;
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::Add(a, b), ng)
    }

    /// Scaling `c · A`.
    pub fn scale(&mut self, a: Var, c: f32) -> Var {
        let out = self.value(a) * c;
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Scale(a, c), ng)
    }

    /// Element-wise logistic sigmoid `σ(A) = 1 / (1 + e^{−A})`.
    pub fn sigmoid(&mut self, a: Var) -> Var {
        let out = self.value(a).map(|x| 1.0 / (1.0 + (-x).exp()));
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Sigmoid(a), ng)
    }

    /// Softmax over all entries of `A` (a row or column vector in practice), max-shifted for stability.
    pub fn softmax(&mut self, a: Var) -> Var {
        let va = self.value(a);
        let p = softmax_slice(va.as_slice(), 1.0);
        let out = Mat::from_vec(va.nrows(), va.ncols(), p);
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Softmax(a), ng)
    }

    /// Frobenius inner product `Σ A ⊙ B` as a `1 × 1` scalar (same shapes).
    pub fn dot(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.shape(), vb.shape(), "dot: shapes differ");
        let out = Mat::from_element(1, 1, va.dot(vb));
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::Dot(a, b), ng)
    }

    /// Scaled dot of a vector with every column: `out[j] = scale · aᵀ B[:, j]`; `a` is `d × 1`, `B` is `d × n`, out is `1 × n`.
    pub fn col_dot(&mut self, a: Var, b: Var, scale: f32) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.ncols(), 1, "col_dot: a must be a column vector");
        assert_eq!(va.nrows(), vb.nrows(), "col_dot: row counts differ");
        let out = vb.tr_mul(va).transpose() * scale;
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::ColDot { a, b, scale }, ng)
    }

    /// Layer norm of every column of `X` (`d × n`) with learnable `gain` and `bias` (`d × 1`):
    /// `y = gain ⊙ (x − mean(x)) / sqrt(var(x) + ε) + bias`, ε = [`LAYER_NORM_EPS`].
    pub fn layer_norm(&mut self, x: Var, gain: Var, bias: Var) -> Var {
        let (vx, vg, vb) = (self.value(x), self.value(gain), self.value(bias));
        let d = vx.nrows();
        assert!(d > 0, "layer_norm: empty vectors");
        assert_eq!(vg.shape(), (d, 1), "layer_norm: gain shape");
        assert_eq!(vb.shape(), (d, 1), "layer_norm: bias shape");
        let n = vx.ncols();
        let (means, inv_std) = column_stats(vx.as_slice(), d);
        let (gs, bs) = (vg.as_slice(), vb.as_slice());
        let mut out = Mat::zeros(d, n);
        let cols = vx.as_slice().chunks_exact(d).zip(means.iter().zip(&inv_std));
        let recording = self.is_recording();
        // x̂ is kept only for the backward pass; inference writes y directly (same arithmetic).
        let mut xhat = if recording { Mat::zeros(d, n) } else { Mat::zeros(0, 0) };
        if recording {
            for (((col, (&mean, &r)), hcol), ocol) in
                cols.zip(xhat.as_mut_slice().chunks_exact_mut(d)).zip(out.as_mut_slice().chunks_exact_mut(d))
            {
                for ((((h, o), &x), &g), &b) in hcol.iter_mut().zip(ocol.iter_mut()).zip(col).zip(gs).zip(bs) {
                    *h = (x - mean) * r;
                    *o = g * *h + b;
                }
            }
        } else {
            for ((col, (&mean, &r)), ocol) in cols.zip(out.as_mut_slice().chunks_exact_mut(d)) {
                for (((o, &x), &g), &b) in ocol.iter_mut().zip(col).zip(gs).zip(bs) {
                    *o = g * ((x - mean) * r) + b;
                }
            }
        }
        let ng = self.ng(x) || self.ng(gain) || self.ng(bias);
        let op = if recording { Op::LayerNorm { x, gain, bias, xhat, inv_std } } else { Op::Input };
        self.push(Val::Owned(out), op, ng)
    }

    /// Weighted embedding bag over a parameter table (`rows × buckets`, one column per bucket):
    /// `out[:, j] = Σ_{(id, w) ∈ bags[j]} w · T[:, id]`; out is `rows × bags.len()`.
    ///
    /// Embedding lookup is a bag of one id with weight 1; mean pooling of token
    /// embeddings is a bag with weights `1/len`; an empty bag gives a zero
    /// column. The table's gradient is sparse (only touched columns).
    pub fn embedding_bag(&mut self, table: ParamId, bags: Vec<Vec<(u32, f32)>>) -> Var {
        let t = &self.params[table.0];
        let rows = t.nrows();
        let ts = t.as_slice();
        let mut out = Mat::zeros(rows, bags.len());
        if rows > 0 {
            for (col, bag) in out.as_mut_slice().chunks_exact_mut(rows).zip(&bags) {
                for &(id, w) in bag {
                    let src = &ts[id as usize * rows..(id as usize + 1) * rows];
                    for (o, &x) in col.iter_mut().zip(src) {
                        *o += w * x;
                    }
                }
            }
        }
        let rec = self.is_recording();
        let op = if rec { Op::EmbeddingBag { table, bags } } else { Op::Input };
        self.push(Val::Owned(out), op, rec)
    }

    /// Mean of groups of columns: `out[:, g] = mean_{i ∈ groups[g]} X[:, i]` (an empty group gives zeros).
    pub fn mean_pool(&mut self, x: Var, groups: Vec<Vec<usize>>) -> Var {
        let vx = self.value(x);
        let mut out = Mat::zeros(vx.nrows(), groups.len());
        for (g, members) in groups.iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            let w = 1.0 / members.len() as f32;
            let mut col = out.column_mut(g);
            for &i in members {
                col.axpy(w, &vx.column(i), 1.0);
            }
        }
        let ng = self.ng(x);
        self.push(Val::Owned(out), Op::MeanPool { x, groups }, ng)
    }

    /// Stacks `A` (`r1 × n`) on top of `B` (`r2 × n`).
    pub fn concat_rows(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.ncols(), vb.ncols(), "concat_rows: column counts differ");
        let (r1, r2, n) = (va.nrows(), vb.nrows(), va.ncols());
        let mut out = Mat::zeros(r1 + r2, n);
        out.rows_mut(0, r1).copy_from(va);
        out.rows_mut(r1, r2).copy_from(vb);
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::ConcatRows(a, b), ng)
    }

    /// Rows `start .. start + len` of `A`.
    pub fn rows(&mut self, a: Var, start: usize, len: usize) -> Var {
        let va = self.value(a);
        assert!(start + len <= va.nrows(), "rows: range out of bounds");
        let out = va.rows(start, len).into_owned();
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Rows { a, start }, ng)
    }

    /// Columns `start .. start + len` of `A`.
    pub fn cols(&mut self, a: Var, start: usize, len: usize) -> Var {
        let va = self.value(a);
        assert!(start + len <= va.ncols(), "cols: range out of bounds");
        let r = va.nrows();
        let out = Mat::from_column_slice(r, len, &va.as_slice()[start * r..(start + len) * r]);
        let ng = self.ng(a);
        self.push(Val::Owned(out), Op::Cols { a, start }, ng)
    }

    /// Places `B` (`r × n2`) to the right of `A` (`r × n1`).
    pub fn concat_cols(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.value(a), self.value(b));
        assert_eq!(va.nrows(), vb.nrows(), "concat_cols: row counts differ");
        let (r, n1, n2) = (va.nrows(), va.ncols(), vb.ncols());
        let mut data = Vec::with_capacity(r * (n1 + n2));
        data.extend_from_slice(va.as_slice());
        data.extend_from_slice(vb.as_slice());
        let out = Mat::from_vec(r, n1 + n2, data);
        let ng = self.ng(a) || self.ng(b);
        self.push(Val::Owned(out), Op::ConcatCols(a, b), ng)
    }

    /// Listwise ListNet loss `weight · KL(P_true ‖ P_pred)` as a `1 × 1` scalar, where
    /// `P_true = softmax(labels / T)` and `P_pred = softmax(logits)` over a `1 × n` row of logits.
    ///
    /// The temperature sharpens the *target* only. Dividing the logits by the
    /// same `T` (as the peer does) adds nothing the model cannot learn, and a
    /// temperature too soft for a long list makes a flat ranking the optimum;
    /// see [`crate::train::TrainConfig::list_temperature`].
    pub fn listnet_loss(&mut self, logits: Var, labels: &[f32], temperature: f32, weight: f32) -> Var {
        let vz = self.value(logits);
        assert_eq!(vz.nrows(), 1, "listnet_loss: logits must be a row");
        assert_eq!(vz.ncols(), labels.len(), "listnet_loss: label count");
        assert!(temperature > 0.0, "listnet_loss: temperature must be > 0");
        let inv_t = 1.0 / temperature;
        let log_pt = log_softmax_slice(labels, inv_t);
        let log_pp = log_softmax_slice(vz.as_slice(), 1.0);
        let p_true: Vec<f32> = log_pt.iter().map(|l| l.exp()).collect();
        let kl: f32 = p_true
            .iter()
            .zip(log_pt.iter().zip(&log_pp))
            .map(|(&p, (&lt, &lp))| if p > 0.0 { p * (lt - lp) } else { 0.0 })
            .sum();
        let out = Mat::from_element(1, 1, weight * kl);
        let p_pred: Vec<f32> = log_pp.iter().map(|l| l.exp()).collect();
        let ng = self.ng(logits);
        let op = Op::ListNet { logits, p_pred, p_true, weight };
        self.push(Val::Owned(out), op, ng)
    }

    /// Runs the backward pass from the scalar `loss` and returns the parameter gradients.
    ///
    /// # Panics
    /// Panics on an inference tape or if `loss` is not `1 × 1`.
    pub fn backward(self, loss: Var) -> Gradients {
        let Tape { params, values, ops, needs_grad } = self;
        let ops = ops.expect("backward needs a recording tape (Tape::new)");
        assert_eq!(values[loss.0].get().shape(), (1, 1), "backward: loss must be a scalar");
        let mut grads = Gradients::empty(params.len());
        let mut node_grads: Vec<Option<Mat>> = vec![None; values.len()];
        node_grads[loss.0] = Some(Mat::from_element(1, 1, 1.0));
        let val = |v: Var| values[v.0].get();
        let acc = |node_grads: &mut Vec<Option<Mat>>, v: Var, g: Mat| {
            if !needs_grad[v.0] {
                return;
            }
            match &mut node_grads[v.0] {
                Some(existing) => *existing += g,
                slot @ None => *slot = Some(g),
            }
        };
        for (idx, op) in ops.into_iter().enumerate().rev() {
            let Some(g) = node_grads[idx].take() else {
                continue;
            };
            match op {
                Op::Input => {}
                // A parameter leaf: its accumulated gradient is the result.
                Op::Param(id) => add_grad(&mut grads.grads[id.0], Grad::Dense(g)),
                // C = A·B:  dA = dC·Bᵀ,  dB = Aᵀ·dC
                Op::MatMul(a, b) => {
                    if needs_grad[a.0] {
                        acc(&mut node_grads, a, mat_mul_bt(&g, val(b)));
                    }
                    if needs_grad[b.0] {
                        acc(&mut node_grads, b, mat_mul(&val(a).transpose(), &g));
                    }
                }
                // C = Aᵀ:  dA = dCᵀ
                Op::Transpose(a) => acc(&mut node_grads, a, g.transpose()),
                // C = A + B:  dA = dC,  dB = dC
                Op::Add(a, b) => {
                    acc(&mut node_grads, a, g.clone());
                    acc(&mut node_grads, b, g);
                }
                // C = c·A:  dA = c·dC
                Op::Scale(a, c) => acc(&mut node_grads, a, g * c),
                // y = σ(a):  da = dy ⊙ y(1 − y)
                Op::Sigmoid(a) => {
                    let y = values[idx].get();
                    acc(&mut node_grads, a, g.zip_map(y, |d, y| d * y * (1.0 - y)));
                }
                // y = softmax(a):  da = y ⊙ (dy − Σ y⊙dy)
                Op::Softmax(a) => {
                    let y = values[idx].get();
                    let s = y.dot(&g);
                    acc(&mut node_grads, a, g.zip_map(y, |d, y| y * (d - s)));
                }
                // c = Σ A⊙B:  dA = dc·B,  dB = dc·A
                Op::Dot(a, b) => {
                    let dc = g[(0, 0)];
                    if needs_grad[a.0] {
                        acc(&mut node_grads, a, val(b) * dc);
                    }
                    if needs_grad[b.0] {
                        acc(&mut node_grads, b, val(a) * dc);
                    }
                }
                // out_j = s·aᵀB_j:  da = s·B·doutᵀ,  dB = s·a·dout
                Op::ColDot { a, b, scale } => {
                    if needs_grad[a.0] {
                        acc(&mut node_grads, a, (val(b) * g.transpose()) * scale);
                    }
                    if needs_grad[b.0] {
                        acc(&mut node_grads, b, (val(a) * &g) * scale);
                    }
                }
                // y = g⊙x̂ + b, x̂ = (x − μ)·r, r = (var + ε)^{-1/2}, per column:
                //   dgain = Σ_j dy⊙x̂,  dbias = Σ_j dy,
                //   dx = r·(dx̂ − mean(dx̂) − x̂·mean(dx̂⊙x̂)) with dx̂ = dy⊙gain
                Op::LayerNorm { x, gain, bias, xhat, inv_std } => {
                    let vg = val(gain).as_slice();
                    let (d, n) = xhat.shape();
                    let cols = || g.as_slice().chunks_exact(d).zip(xhat.as_slice().chunks_exact(d));
                    if needs_grad[gain.0] {
                        let mut dg = Mat::zeros(d, 1);
                        for (gc, hc) in cols() {
                            for ((acc, &gv), &h) in dg.as_mut_slice().iter_mut().zip(gc).zip(hc) {
                                *acc += gv * h;
                            }
                        }
                        acc(&mut node_grads, gain, dg);
                    }
                    if needs_grad[bias.0] {
                        let mut db = Mat::zeros(d, 1);
                        for gc in g.as_slice().chunks_exact(d) {
                            for (acc, &gv) in db.as_mut_slice().iter_mut().zip(gc) {
                                *acc += gv;
                            }
                        }
                        acc(&mut node_grads, bias, db);
                    }
                    if needs_grad[x.0] {
                        let mut dx = Mat::zeros(d, n);
                        let inv_d = 1.0 / d as f32;
                        for (((gc, hc), dc), &r) in cols().zip(dx.as_mut_slice().chunks_exact_mut(d)).zip(&inv_std) {
                            let (mut mean_dh, mut mean_dh_h) = (0.0f32, 0.0f32);
                            for ((&gv, &h), &gain_v) in gc.iter().zip(hc).zip(vg) {
                                let dh = gv * gain_v;
                                mean_dh += dh;
                                mean_dh_h += dh * h;
                            }
                            mean_dh *= inv_d;
                            mean_dh_h *= inv_d;
                            for (((out, &gv), &h), &gain_v) in dc.iter_mut().zip(gc).zip(hc).zip(vg) {
                                *out = r * (gv * gain_v - mean_dh - h * mean_dh_h);
                            }
                        }
                        acc(&mut node_grads, x, dx);
                    }
                }
                // out_j = Σ w·T[:, id]:  dT[:, id] += w·dout_j  (sparse: touched columns only)
                Op::EmbeddingBag { table, bags } => {
                    let mut cols: Vec<u32> = bags.iter().flatten().map(|&(id, _)| id).collect();
                    cols.sort_unstable();
                    cols.dedup();
                    let rows = g.nrows();
                    let mut vals = Mat::zeros(rows, cols.len());
                    if rows > 0 {
                        let vs = vals.as_mut_slice();
                        for (gc, bag) in g.as_slice().chunks_exact(rows).zip(&bags) {
                            for &(id, w) in bag {
                                let k = cols.binary_search(&id).expect("id collected above");
                                for (o, &x) in vs[k * rows..(k + 1) * rows].iter_mut().zip(gc) {
                                    *o += w * x;
                                }
                            }
                        }
                    }
                    add_grad(&mut grads.grads[table.0], Grad::Sparse(SparseGrad { cols, values: vals }));
                }
                // out_g = mean_{i∈G} X_i:  dX_i += dout_g / |G|
                Op::MeanPool { x, groups } => {
                    let vx = val(x);
                    let mut dx = Mat::zeros(vx.nrows(), vx.ncols());
                    for (gi, members) in groups.iter().enumerate() {
                        if members.is_empty() {
                            continue;
                        }
                        let w = 1.0 / members.len() as f32;
                        for &i in members {
                            dx.column_mut(i).axpy(w, &g.column(gi), 1.0);
                        }
                    }
                    acc(&mut node_grads, x, dx);
                }
                // out = [A; B]:  dA = dout[rows of A],  dB = dout[rows of B]
                Op::ConcatRows(a, b) => {
                    let r1 = val(a).nrows();
                    let r2 = val(b).nrows();
                    acc(&mut node_grads, a, g.rows(0, r1).into_owned());
                    acc(&mut node_grads, b, g.rows(r1, r2).into_owned());
                }
                // out = A[start .. start + len]:  dA[start .. start + len] = dout, 0 elsewhere
                Op::Rows { a, start } => {
                    let va = val(a);
                    let mut da = Mat::zeros(va.nrows(), va.ncols());
                    da.rows_mut(start, g.nrows()).copy_from(&g);
                    acc(&mut node_grads, a, da);
                }
                // out = A[:, start .. start + len]:  dA[:, start .. start + len] = dout, 0 elsewhere
                Op::Cols { a, start } => {
                    let va = val(a);
                    let mut da = Mat::zeros(va.nrows(), va.ncols());
                    da.columns_mut(start, g.ncols()).copy_from(&g);
                    acc(&mut node_grads, a, da);
                }
                // out = [A B]:  dA = dout[cols of A],  dB = dout[cols of B]
                Op::ConcatCols(a, b) => {
                    let n1 = val(a).ncols();
                    let n2 = val(b).ncols();
                    acc(&mut node_grads, a, g.columns(0, n1).into_owned());
                    acc(&mut node_grads, b, g.columns(n1, n2).into_owned());
                }
                // L = w·Σ p_true (ln p_true − ln p_pred), p_pred = softmax(z/T):
                //   dz = dL · w · (p_pred − p_true) / T
                // ∂ KL / ∂ z_i = P_pred_i − P_true_i
                Op::ListNet { logits, p_pred, p_true, weight } => {
                    let s = g[(0, 0)] * weight;
                    let dz = Mat::from_iterator(1, p_pred.len(), p_pred.iter().zip(&p_true).map(|(p, t)| s * (p - t)));
                    acc(&mut node_grads, logits, dz);
                }
            }
        }
        grads
    }
}

/// Softmax of `x · scale`, max-shifted.
pub fn softmax_slice(x: &[f32], scale: f32) -> Vec<f32> {
    log_softmax_slice(x, scale).iter().map(|l| l.exp()).collect()
}

/// Log-softmax of `x · scale`, computed stably (log-sum-exp with the max shifted out).
pub fn log_softmax_slice(x: &[f32], scale: f32) -> Vec<f32> {
    let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v * scale));
    if x.is_empty() {
        return Vec::new();
    }
    let sum: f32 = x.iter().map(|&v| (v * scale - max).exp()).sum();
    let lse = max + sum.ln();
    x.iter().map(|&v| v * scale - lse).collect()
}

#[cfg(test)]
mod tests;
