//! `engram-ingestor`: command-line entry point.

fn main() {}
