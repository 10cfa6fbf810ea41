//! Helpers shared by the hand-run benchmarks in `benches/benches/`.
