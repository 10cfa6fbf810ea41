//! Support code for the end-to-end tests that run the real Engram binaries.
