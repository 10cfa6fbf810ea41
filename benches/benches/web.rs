//! `engram-scorer web` on a data home of 10,000 memories and 100 sessions
//! (20,000 session events): the release binary, measured over loopback from
//! this process as a browser would load it.
//!
//! Run: `cargo bench -p benches --bench web`. It prints:
//!
//! * **first page load**: the page, then its three assets in parallel, then
//!   the dashboard's two API calls in parallel (what a browser fetches before
//!   the dashboard can render), each on a new connection; 30 loads, the
//!   first one on a server that has not answered anything yet.
//! * **search**: `GET /api/search?q=…` for 200 queries of 1 to 3 words drawn
//!   from the memories' own long-tailed vocabulary: the round trip, and the
//!   server's own `took_ms` (the ranking alone).
//! * **RSS**: the server's resident set after start, after the loads, and
//!   idle 8 s later (its blocking threads exit after 5 s idle).
//!
//! Targets (issue 20): first load ≤ 200 ms and search p50 ≤ 10 ms at 10k
//! memories; idle RSS ≤ 50 MB.

#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use benches::web::{MEMORIES, Server};
use rand::SeedableRng as _;
use serde_json::Value;

fn main() {
    let home = tempfile::tempdir().unwrap();
    benches::web::build_home(home.path());
    let server = Server::start(&benches::release_scorer(), home.path());
    println!("server: {} (pid {})", server.addr, server.child.id());
    let rss_start = rss_kib(server.child.id());

    let mut loads = Vec::new();
    for _ in 0..30 {
        loads.push(first_load(&server.addr));
    }
    let cold = loads[0];
    summary("first page load (page, 3 assets, /api/stats + /api/projects)", loads);
    println!("  the very first load, on a fresh server: {cold:.2?}");

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut trips = Vec::new();
    let mut ranked = Vec::new();
    for i in 0..200 {
        let q = benches::lesson(&mut rng, 1 + i % 3).replace(' ', "+");
        let t = Instant::now();
        let (status, body) = get(&server.addr, &format!("/api/search?q={q}&limit=20"));
        trips.push(t.elapsed());
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        ranked.push(Duration::from_secs_f64(v["took_ms"].as_f64().unwrap() / 1e3));
    }
    summary("search round trip (200 queries, limit 20)", trips);
    summary("search ranking inside the server (took_ms)", ranked);
    let rss_busy = rss_kib(server.child.id());
    std::thread::sleep(Duration::from_secs(8));
    let rss_idle = rss_kib(server.child.id());
    println!(
        "RSS: {:.1} MB at start, {:.1} MB after the loads, {:.1} MB idle 8 s later ({MEMORIES} memories)",
        rss_start / 1024.0,
        rss_busy / 1024.0,
        rss_idle / 1024.0
    );
}

/// One GET on a new connection: the status and the body (the server always
/// sends a Content-Length; `Connection: close` ends the body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: */*\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

fn parallel(addr: &str, paths: &[&str]) {
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths.iter().map(|p| scope.spawn(move || get(addr, p))).collect();
        for (h, p) in handles.into_iter().zip(paths) {
            let (status, body) = h.join().unwrap();
            assert_eq!(status, 200, "{p}: {body}");
        }
    });
}

fn first_load(addr: &str) -> Duration {
    let t = Instant::now();
    parallel(addr, &["/"]);
    parallel(addr, &["/app.js", "/app.css", "/favicon.svg"]);
    parallel(addr, &["/api/stats", "/api/projects"]);
    t.elapsed()
}

fn rss_kib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN)
}

fn summary(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    println!("{label}: n={} p50={:.2?} p95={:.2?} max={:.2?}", v.len(), at(0.5), at(0.95), v[v.len() - 1]);
}
