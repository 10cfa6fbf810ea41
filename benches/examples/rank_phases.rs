//! Times the phases of a ranking on a large store (for profiling):
//! `rank_phases DIR [N]` builds DIR once, then times the queries.

#![allow(clippy::unwrap_used)]

use std::time::Instant;

use shared::journal::Journal;
use shared::paths::Paths;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or("/tmp/rank-phases", String::as_str));
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let fresh = !dir.exists();
    let mut j = Journal::open(&Paths::at(&dir), "bench").unwrap();
    if fresh {
        for chunk in benches::memory_events(n, 11).chunks(10_000) {
            j.append(chunk).unwrap();
        }
    }
    if args.get(3).map(String::as_str) == Some("loop") {
        let tz = jiff::tz::TimeZone::UTC;
        let t = Instant::now();
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
        let owned: Vec<String> = (0..4).map(|i| benches::lesson(&mut rng, 6 + i * 3)).collect();
        let queries: Vec<&str> = owned.iter().map(String::as_str).collect();
        for i in 0..200 {
            let req = shared::rank::RankRequest {
                query: queries[i % 4],
                query_embedding: None,
                session: None,
                project: Some("engram"),
                trigger: "prompt",
                now: benches::BENCH_NOW,
                tz: &tz,
                k: 5,
                budget_chars: 8000,
                require_match: true,
                explore_draw: 0.99,
            };
            shared::rank::rank(j.store(), &shared::config::Config::default(), None, &req).unwrap();
        }
        eprintln!("rank: {:.2} ms each", t.elapsed().as_secs_f64() * 1e3 / 200.0);
        return;
    }
    let conn = j.store().conn();
    for q in ["\"auth\" OR \"token\" OR \"cache\" OR \"retry\"", "\"sqlite\" OR \"migration\"", "\"auth\""] {
        let t = Instant::now();
        let mut stmt = conn
            .prepare("SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank LIMIT 50")
            .unwrap();
        let k = stmt.query_map([q], |r| r.get::<_, i64>(0)).unwrap().count();
        let matches: i64 =
            conn.query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1", [q], |r| r.get(0)).unwrap();
        eprintln!("bm25 {q}: {:.2} ms for {k} of {matches} matches", t.elapsed().as_secs_f64() * 1e3);
    }
    for (name, sql) in [
        (
            "effective",
            "SELECT rowid FROM memories WHERE is_deleted = 0 AND deprecated = 0 ORDER BY decay_key DESC LIMIT 30",
        ),
        (
            "project",
            "SELECT rowid FROM memories WHERE project = 'engram' AND is_deleted = 0 AND deprecated = 0 ORDER BY decay_key DESC LIMIT 30",
        ),
        ("pinned", "SELECT rowid FROM memories WHERE pinned = 1 AND is_deleted = 0 ORDER BY decay_key DESC LIMIT 20"),
    ] {
        let t = Instant::now();
        let k = conn.prepare(sql).unwrap().query_map([], |r| r.get::<_, i64>(0)).unwrap().count();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        eprintln!("{name}: {:.3} ms ({k} rows) plan {plan:?}", t.elapsed().as_secs_f64() * 1e3);
    }
}

/// Ranks repeatedly (for `perf record`): `rank_phases DIR N loop`.
#[allow(dead_code)]
fn _doc() {}
