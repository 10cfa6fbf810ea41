//! `engram-scorer`: command-line entry point.

fn main() {}
