//! Hand-run benchmarks of the predictor's hot paths: `cargo bench -p benches --bench predictor`.
//!
//! Targets (one core): forward for 100 pre-embedded 768-d candidates ≤ 0.2 ms, for 100
//! text candidates of 50 tokens ≤ 0.2 ms, one training step on a list of 100 ≤ 1 ms,
//! checkpoint encode and decode ≤ 20 ms each, 500 lists × 50 candidates × 10 epochs ≤ 5 s.
//! Peer (Signet sidecar, same box class): score of 100 candidates ≈ 17 ms including JSON,
//! 15–18 ms per training step, checkpoint save ≈ 1.0 s and load ≈ 0.6 s.

use divan::{Bencher, black_box};
use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::features::{CandidateSignals, SessionSignals};
use predictor::model::{Candidate, Model, ModelConfig, OwnedCandidate, OwnedQuery};
use predictor::train::{self, AdamState, Sample, TrainConfig};

fn main() {
    divan::main();
}

/// Tiny deterministic generator (SplitMix64), so the benches need no RNG crate.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n)) as u32
    }
}

fn session() -> SessionSignals {
    SessionSignals { hour: 14.5, weekday: 2, month0: 5, gap_hours: Some(20.0), project: Some("engram".into()) }
}

fn signals(g: &mut Gen) -> CandidateSignals {
    CandidateSignals {
        age_days: g.unit() * 100.0,
        importance: g.unit(),
        access_count: g.below(30),
        has_embedding: true,
        bm25_score: (g.unit() < 0.5).then(|| g.unit() * 10.0),
        effective_score: g.unit(),
        tag_overlap: g.unit(),
        times_injected: g.below(10),
        times_useful: g.unit() * 3.0,
        lexical_overlap: g.unit(),
        neighbor_score: g.unit(),
        ..CandidateSignals::default()
    }
}

fn embedded_list(g: &mut Gen, n: usize, dim: usize) -> Sample {
    let vec = |g: &mut Gen| (0..dim).map(|_| g.unit() * 2.0 - 1.0).collect::<Vec<f32>>();
    Sample {
        query: OwnedQuery { tokens: Vec::new(), embedding: Some(vec(g)), session: session() },
        candidates: (0..n)
            .map(|_| OwnedCandidate { tokens: Vec::new(), embedding: Some(vec(g)), signals: signals(g) })
            .collect(),
        labels: (0..n).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect(),
        weight: 1.0,
    }
}

fn text_list(g: &mut Gen, n: usize, tokens: usize, buckets: u32) -> Sample {
    Sample {
        query: OwnedQuery { tokens: (0..12).map(|_| g.below(buckets)).collect(), embedding: None, session: session() },
        candidates: (0..n)
            .map(|_| OwnedCandidate {
                tokens: (0..tokens).map(|_| g.below(buckets)).collect(),
                embedding: None,
                signals: signals(g),
            })
            .collect(),
        labels: (0..n).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect(),
        weight: 1.0,
    }
}

fn model() -> Model {
    Model::new(ModelConfig::default(), 1).expect("default config is valid")
}

fn candidates(s: &Sample) -> Vec<Candidate<'_>> {
    s.candidates.iter().map(OwnedCandidate::as_candidate).collect()
}

#[divan::bench]
fn forward_100_embedded_768(bencher: Bencher) {
    let m = model();
    let s = embedded_list(&mut Gen(1), 100, 768);
    let c = candidates(&s);
    let q = s.query.as_query();
    bencher.bench_local(|| black_box(m.score(black_box(&q), black_box(&c)).expect("score")));
}

#[divan::bench]
fn forward_100_text_50_tokens(bencher: Bencher) {
    let m = model();
    let s = text_list(&mut Gen(2), 100, 50, 16_384);
    let c = candidates(&s);
    let q = s.query.as_query();
    bencher.bench_local(|| black_box(m.score(black_box(&q), black_box(&c)).expect("score")));
}

fn one_step(m: &mut Model, opt: &mut AdamState, s: &Sample, c: &[Candidate<'_>]) {
    let tc = TrainConfig::default();
    let (_, mut g) = m.loss_and_gradients(&s.query.as_query(), c, &s.labels, 0.5, 1.0).expect("grads");
    train::clip_gradients(&mut g, tc.clip_norm);
    opt.apply(m, &g, &tc.adam);
}

#[divan::bench]
fn train_step_100_embedded_768(bencher: Bencher) {
    let mut m = model();
    let mut opt = AdamState::new(&m);
    let s = embedded_list(&mut Gen(3), 100, 768);
    let c = candidates(&s);
    bencher.bench_local(|| one_step(&mut m, &mut opt, &s, &c));
}

#[divan::bench]
fn train_step_100_text_50_tokens(bencher: Bencher) {
    let mut m = model();
    let mut opt = AdamState::new(&m);
    let s = text_list(&mut Gen(4), 100, 50, 16_384);
    let c = candidates(&s);
    bencher.bench_local(|| one_step(&mut m, &mut opt, &s, &c));
}

fn full_checkpoint() -> Checkpoint {
    let m = model();
    let opt = AdamState::new(&m);
    Checkpoint { flags: Flags::default(), model: m, optimizer: Some(opt), meta: TrainingMeta::default() }
}

#[divan::bench(sample_count = 30)]
fn checkpoint_encode(bencher: Bencher) {
    let c = full_checkpoint();
    bencher.bench_local(|| black_box(checkpoint::encode(black_box(&c))));
}

#[divan::bench(sample_count = 30)]
fn checkpoint_decode(bencher: Bencher) {
    let c = full_checkpoint();
    let bytes = checkpoint::encode(&c);
    let cfg = *c.model.config();
    bencher.bench_local(|| black_box(checkpoint::decode(black_box(&bytes), Some(&cfg)).expect("decode")));
}

/// 500 lists × 50 text candidates (30 tokens) × 10 epochs, batch 4, with a 50-list validation split.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn train_500_lists_50_candidates_10_epochs(bencher: Bencher) {
    let mut g = Gen(5);
    let data: Vec<Sample> = (0..550).map(|_| text_list(&mut g, 50, 30, 16_384)).collect();
    let (tr, va) = data.split_at(500);
    let tc = TrainConfig { epochs: 10, patience: 10, ..TrainConfig::default() };
    bencher
        .with_inputs(|| {
            let m = model();
            let opt = AdamState::new(&m);
            (m, opt)
        })
        .bench_local_values(|(mut m, mut opt)| {
            train::train(&mut m, &mut opt, tr, va, &tc, &mut || false).expect("train")
        });
}
