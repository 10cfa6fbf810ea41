//! `engram-trainer`: command-line entry point.

fn main() {}
