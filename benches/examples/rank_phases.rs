//! Times the phases of a ranking on a large store (for profiling).
//!
//! * `rank_phases DIR [N]` builds DIR (a data home of `N` memories, the
//!   benches' corpus) once, then times single queries of each candidate source.
//! * `rank_phases DIR [N] loop [ITERS]` ranks `ITERS` times (default 200)
//!   with the 64 queries, project and sessions of the scorer bench's
//!   `rank_rpc`, and prints per phase (pool, predictor state, session
//!   signals, the whole ranking) the fastest, median and mean. Nothing is
//!   recorded, so under `valgrind --tool=callgrind` the instruction counts
//!   are those of ranking alone.
//! * `rank_phases DIR [N] rpc [ITERS] [GAP_MS]` sends the same `rank`
//!   requests as the scorer bench through `scorer::serve` (in-memory
//!   connection, recorder thread and all) and prints the fastest, median and
//!   mean answer time; `GAP_MS` pauses between requests so that the recorder
//!   is idle when the next one arrives. Under
//!   `valgrind --tool=callgrind --separate-threads=yes` the main thread's
//!   count is the ranking's and `scorer-recorder`'s the recording's.
//! * `rank_phases DIR [N] dump` prints, for each of the 64 queries of `loop`,
//!   every ranked candidate with its signals and scores (floats exactly), so
//!   that two builds can be diffed to show that a change ranks the same.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::domain::rank::{self, PoolLimits, PoolQuery, PredictorState, RankRequest};
use shared::storage::journal::Journal;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or("/tmp/rank-phases", String::as_str));
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let fresh = !dir.exists();
    let mut j = shared::projection::open(&Paths::at(&dir), "bench").unwrap();
    if fresh {
        for chunk in benches::memory_events(n, 11).chunks(10_000) {
            j.append(chunk).unwrap();
        }
    }
    let iters: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(200);
    match args.get(3).map(String::as_str) {
        Some("loop") => ranking_loop(&j, iters),
        Some("dump") => dump(&j),
        Some("rpc") => {
            drop(j);
            let gap = Duration::from_millis(args.get(5).and_then(|a| a.parse().ok()).unwrap_or(0));
            rpc_loop(Paths::at(&dir), iters, gap);
        }
        _ => sources(&j),
    }
}

/// The scorer bench's `rank_rpc` requests, answered by `scorer::serve`.
fn rpc_loop(paths: Paths, iters: usize, gap: Duration) {
    use rand::SeedableRng;
    let opts = scorer::ServeOptions {
        native_dim: 768,
        checkpoint: None,
        paths: Some(paths),
        max_line: shared::base::rpc::DEFAULT_MAX_LINE,
        training_budget: Duration::from_secs(60),
    };
    let (conn, client, _threads) = shared::base::rpc::Connection::<scorer::protocol::Request>::memory(opts.max_line);
    let server = std::thread::spawn(move || scorer::serve(conn, opts, shared::base::shutdown::Shutdown::manual()));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let requests: Vec<Vec<u8>> = (0..64)
        .map(|i| {
            let q = benches::lesson(&mut rng, 6 + i % 10);
            serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "rank",
                   "params": {"query": q, "project": "engram", "trigger": "prompt", "session_key": format!("claude:bench{}", i % 8),
                              "now_ms": benches::BENCH_NOW.0}})
            .to_string()
            .into_bytes()
        })
        .collect();
    let call = |line: &[u8]| {
        client.send_line(line);
        client.output.recv_timeout(Duration::from_secs(120)).unwrap()
    };
    call(&requests[0]);
    let mut phases = Phases::default();
    for i in 0..iters {
        if !gap.is_zero() {
            std::thread::sleep(gap);
        }
        let t = Instant::now();
        call(&requests[(i + 1) % requests.len()]);
        phases.add("rank rpc", t.elapsed());
    }
    drop(client);
    server.join().unwrap().unwrap();
    eprintln!("{iters} rank requests, {} ms apart", gap.as_millis());
    phases.print();
}

/// Per-phase durations of one run.
#[derive(Default)]
struct Phases(Vec<(&'static str, Vec<Duration>)>);

impl Phases {
    fn add(&mut self, name: &'static str, d: Duration) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(d),
            None => self.0.push((name, vec![d])),
        }
    }

    fn print(mut self) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        for (name, v) in &mut self.0 {
            v.sort();
            let mean = v.iter().sum::<Duration>() / v.len() as u32;
            eprintln!(
                "{name:<16} fastest {:>6.3} ms  median {:>6.3} ms  mean {:>6.3} ms",
                ms(v[0]),
                ms(v[v.len() / 2]),
                ms(mean)
            );
        }
    }
}

/// Every candidate of the `loop` queries' rankings, one line each.
fn dump(j: &Journal) {
    use rand::SeedableRng;
    let tz = jiff::tz::TimeZone::UTC;
    let config = Config::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let queries: Vec<String> = (0..64).map(|i| benches::lesson(&mut rng, 6 + i % 10)).collect();
    for (i, query) in queries.iter().enumerate() {
        let session = SessionKey(format!("claude:bench{}", i % 8));
        let req = bench_request(query, &session, &tz);
        let ranking = rank::rank(j.store(), &config, None, &req).unwrap();
        println!("query {i} {query:?} fts {:?}", ranking.fts_query);
        for it in &ranking.items {
            let m = &it.memory;
            println!(
                "  {} {} {:?} {} {} {:?} {:?} {:?} {:?} {} {} {:?} {:?} {:?}",
                it.rank,
                m.id.as_str(),
                m.sources,
                it.baseline_score.to_bits(),
                it.final_score.to_bits(),
                it.injected,
                it.reasons,
                m.matched,
                m.signals,
                m.shown,
                m.bag.len(),
                m.tags,
                m.source_session,
                m.vector_similarity,
            );
        }
    }
}

/// The ranking request of the scorer bench's `rank_rpc` for one query.
fn bench_request<'a>(query: &'a str, session: &'a SessionKey, tz: &'a jiff::tz::TimeZone) -> RankRequest<'a> {
    RankRequest {
        query,
        query_embedding: None,
        session: Some(session),
        project: Some("engram"),
        trigger: "prompt",
        now: benches::BENCH_NOW,
        tz,
        k: 5,
        budget_chars: 8000,
        require_match: true,
        explore_draw: 0.99,
        context_reset_ms: None,
    }
}

fn ranking_loop(j: &Journal, iters: usize) {
    use rand::SeedableRng;
    let tz = jiff::tz::TimeZone::UTC;
    let config = Config::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let queries: Vec<String> = (0..64).map(|i| benches::lesson(&mut rng, 6 + i % 10)).collect();
    let sessions: Vec<SessionKey> = (0..8).map(|i| SessionKey(format!("claude:bench{i}"))).collect();
    let limits = PoolLimits::of(&config);
    let store = j.store();
    let mut phases = Phases::default();
    for i in 0..iters {
        let query = &queries[i % queries.len()];
        let session = &sessions[i % sessions.len()];
        let req = bench_request(query, session, &tz);
        let t = Instant::now();
        rank::rank(store, &config, None, &req).unwrap();
        phases.add("rank", t.elapsed());
        let t = Instant::now();
        let q = PoolQuery {
            text: query,
            embedding: None,
            project: Some("engram"),
            session: Some(session.as_str()),
            now: benches::BENCH_NOW,
        };
        rank::pool::gather(store, &q, &limits).unwrap();
        phases.add("  pool", t.elapsed());
        let t = Instant::now();
        PredictorState::load(store, &config.predictor).unwrap();
        phases.add("  state", t.elapsed());
        let t = Instant::now();
        rank::session_signals(store, Some(session), Some("engram"), benches::BENCH_NOW, &tz).unwrap();
        phases.add("  session", t.elapsed());
    }
    eprintln!("{iters} rankings; the indented phases are timed separately, after each ranking");
    phases.print();
}

fn sources(j: &Journal) {
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
