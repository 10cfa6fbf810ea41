//! `engram-trainer eval locomo` end to end on one LoCoMo conversation: it
//! runs, its JSON is well formed, the learned ranking is not below BM25, and
//! the results are kept for the HTML report.

#![allow(clippy::unwrap_used)]

mod trainer_world;

use serde_json::Value;
use trainer_world::trainer_bin;

const RANKINGS: [&str; 4] = ["bm25", "baseline", "predictor", "fused"];
const METRICS: [&str; 6] = ["r@1", "r@5", "r@10", "r@50", "ndcg@10", "mrr"];

fn metric(table: &Value, ranking: &str, name: &str) -> f64 {
    table["overall"][ranking][name].as_f64().unwrap_or_else(|| panic!("{ranking} {name} missing in {table}"))
}

#[test]
fn one_conversation_is_evaluated_and_learning_is_not_below_bm25() {
    let Some(dataset) = shared::base::testing::shared_data("bench/locomo/locomo-dev.json") else { return };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let json = dir.path().join("out.json");
    let out = tests::isolated(trainer_bin(), dir.path())
        .arg("--home")
        .arg(&home)
        .args(["eval", "locomo"])
        .arg(&dataset)
        .args(["--conversations", "conv-26", "--seeds", "3", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "eval failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("per user") && stdout.contains("NDCG@10"), "{stdout}");

    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let kept: Value = serde_json::from_slice(&std::fs::read(home.join("evals/locomo.json")).unwrap()).unwrap();
    assert_eq!(report, kept, "the data home keeps the same results");
    assert_eq!(report["conversations"], serde_json::json!(["conv-26"]));
    let questions = report["questions"].as_u64().unwrap();
    assert!(questions > 100, "conv-26 has about 150 retrieval questions, got {questions}");
    for protocol in ["across_users", "per_user"] {
        let table = &report[protocol];
        for ranking in RANKINGS {
            for name in METRICS {
                let v = metric(table, ranking, name);
                assert!((0.0..=1.0).contains(&v), "{protocol} {ranking} {name} = {v}");
            }
            let r = |k: &str| metric(table, ranking, k);
            assert!(r("r@1") <= r("r@5") && r("r@5") <= r("r@10") && r("r@10") <= r("r@50"), "{protocol} {ranking}");
        }
        let by_cat = table["by_category"].as_object().unwrap();
        assert!(by_cat.keys().all(|c| ["1", "2", "3", "4"].contains(&c.as_str())), "{by_cat:?}");
        let per_cat: u64 = by_cat.values().map(|m| m["bm25"]["queries"].as_u64().unwrap()).sum();
        assert_eq!(per_cat, table["overall"]["bm25"]["queries"].as_u64().unwrap());
    }
    // Across users with a single conversation has nothing to train on: the
    // per-user protocol (half of the user's questions) is the learned one.
    assert_eq!(report["per_user"]["overall"]["bm25"]["queries"].as_u64().unwrap(), 3 * (questions / 2));
    let per_user = &report["per_user"];
    for name in ["r@10", "ndcg@10"] {
        for learned in ["predictor", "fused"] {
            assert!(
                metric(per_user, learned, name) >= metric(per_user, "bm25", name),
                "{learned} {name} below BM25: {per_user}"
            );
        }
    }
    // The HTML report charts the kept results.
    let html = dir.path().join("report.html");
    let out = tests::isolated(trainer_bin(), dir.path())
        .arg("--home")
        .arg(&home)
        .args(["report", "--html"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("class=\"eval\"").count(), 16, "the LoCoMo chart has every bar");

    let recall = report["pool"]["recall"].as_f64().unwrap();
    assert!(recall > metric(per_user, "bm25", "r@50") * 0.9 && recall <= 1.0, "pool recall {recall}");
}

#[test]
fn a_dataset_that_is_not_locomo_is_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"not\": \"a list\"").unwrap();
    let out = tests::isolated(trainer_bin(), dir.path())
        .arg("--home")
        .arg(dir.path().join("home"))
        .args(["eval", "locomo"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dataset") && err.contains("bad.json"), "{err}");
    assert!(!dir.path().join("home/evals").exists(), "nothing kept");
}
