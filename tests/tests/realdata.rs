//! The real-data extraction benchmark in CI: the `realdata` binary runs the
//! real `engram-ingestor scan` over the labelled real sessions of
//! `../shared/realdata` (read at run time, never copied here) and its
//! figures are held to the floors of `tests::realdata::report::FLOORS` (a
//! ratchet). Locally the test skips when the corpus is missing; under `CI`
//! it fails.
//!
//! Today's figures (`cargo run --release -p tests --bin realdata --
//! --verbose`): recall 0.385 (30/78; correction 7/12, convention 12/26,
//! gotcha 5/21, fixed-command 1/11, preference 5/8; not in English 8/31),
//! precision 0.681 (32/47), trap memories 0.000 (0/47), 1.09 memories per
//! session.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;
use tests::realdata::report::FLOORS;

/// Runs the `realdata` binary over `corpus` in its own home under `dir`.
fn realdata(dir: &Path, corpus: &Path, ingestor: &Path, home: &str, args: &[&str]) -> std::process::Output {
    tests::isolated(env!("CARGO_BIN_EXE_realdata"), dir)
        .arg("--corpus")
        .arg(corpus)
        .arg("--ingestor")
        .arg(ingestor)
        .arg("--keep")
        .arg(dir.join(home))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn real_sessions_meet_the_extraction_floors() {
    let Some(corpus) = tests::realdata::default_corpus() else {
        println!("SKIP: the real-session corpus ../shared/realdata is missing (set ENGRAM_SHARED_DIR)");
        return;
    };
    let labels = tests::realdata::load_labels(&corpus).unwrap();
    let ingestor = tests::build_bin("ingestor", "engram-ingestor");
    let dir = tempfile::tempdir().unwrap();

    // The text report, printed with a failure (captured stdout).
    let text = realdata(dir.path(), &corpus, &ingestor, "text", &["--verbose", "--check"]);
    let report = String::from_utf8_lossy(&text.stdout);
    println!("{report}");
    eprintln!("{}", String::from_utf8_lossy(&text.stderr));
    for part in ["recall", "precision", "trap memories", "per repository", "missed lessons", "memories that are not"] {
        assert!(report.contains(part), "the report has no {part:?}");
    }

    let json = realdata(dir.path(), &corpus, &ingestor, "json", &["--json"]);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let f = &v["figures"];
    // Every labelled session was read and every lesson scored.
    let lessons: usize = labels.iter().map(|s| s.lessons.len()).sum();
    assert_eq!(f["sessions"], labels.len());
    assert_eq!(f["recall"]["of"], lessons);
    assert_eq!(v["lessons"].as_array().unwrap().len(), lessons);
    assert_eq!(v["scan"]["files"].as_u64().unwrap(), labels.len() as u64, "one transcript per labelled session");
    let memories = f["memories"].as_u64().unwrap();
    assert!(memories > 0, "the scan kept no memory");
    assert_eq!(v["memories"].as_array().unwrap().len() as u64, memories);
    assert_eq!(f["unattributed_memories"], 0, "every memory belongs to a labelled project");
    assert_eq!(f["per_repository"].as_array().unwrap().len() as u64, f["repositories"].as_u64().unwrap());

    let failed: Vec<String> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] != true)
        .map(|c| format!("{}: {}", c["what"].as_str().unwrap_or("?"), c["value"].as_str().unwrap_or("?")))
        .collect();
    assert_eq!(text.status.success(), failed.is_empty(), "--check agrees with the JSON's checks");
    assert!(
        failed.is_empty(),
        "below the floors ({FLOORS:?} in tests/src/realdata/report.rs; the report is above; \
         cargo run --release -p tests --bin realdata -- --verbose):\n  {}",
        failed.join("\n  ")
    );
}
