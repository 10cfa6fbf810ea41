//! The web UI's first page load as a user sees it: headless Chromium,
//! driven by `benches/web_page.py` through Selenium, on the same data home
//! as the `web` bench (10,000 memories, 100 sessions), from navigation start
//! until the dashboard's data is drawn (the `engram:painted` mark app.js sets
//! a frame after the data is in the DOM).
//!
//! Run: `cargo bench -p benches --bench web_page` (by hand: it needs
//! Debian's `chromium` and `chromium-driver`, and Selenium, which it installs
//! with pip into `target/web-venv` as `tests/tests/web.rs` does). It prints,
//! with p50 and p95:
//!
//! * **cold**: 20 loads, each by a fresh server and a fresh browser profile;
//! * **warm**: 20 loads in one browser on one server (after one to warm up);
//!
//! and where the time goes: the page received, its assets received, the
//! dashboard's API calls (and the server's share of the slower one), the data
//! in the DOM, drawn, first contentful paint.
//!
//! Target (issue 20): first page load ≤ 200 ms at 10k memories.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use benches::web::{MEMORIES, Server};
use serde_json::Value;

const LOADS: usize = 20;

const PHASES: [(&str, &str); 8] = [
    ("html", "page received"),
    ("assets", "app.js + app.css received"),
    ("api_start", "API calls sent"),
    ("api_end", "API answers received"),
    ("api_server", "  slower API call, request to first byte"),
    ("ready", "dashboard data in the DOM"),
    ("painted", "dashboard drawn (the load)"),
    ("fcp", "first contentful paint"),
];

fn main() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let Some(python) = python_with_selenium(&target) else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("web_page.py");
    let home = tempfile::tempdir().unwrap();
    benches::web::build_home(home.path());
    let bin = benches::release_scorer();
    let browse = |args: &[&str], profile: &Path| -> Vec<Value> {
        let out = Command::new(&python)
            .arg(&script)
            .args(&args[..2])
            .arg(profile)
            .args(&args[2..])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("XDG_CACHE_HOME", home.path().join(".cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "web_page.py {args:?}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };

    let mut cold = Vec::new();
    for i in 0..LOADS {
        let server = Server::start(&bin, home.path());
        let profile = home.path().join(format!("chromium-cold-{i}"));
        cold.extend(browse(&["cold", &server.url()], &profile));
        drop(server);
        let _ = std::fs::remove_dir_all(&profile);
    }
    report(&format!("cold: fresh server and browser profile each time, {MEMORIES} memories"), &cold);

    let server = Server::start(&bin, home.path());
    let n = (LOADS + 1).to_string();
    let warm = browse(&["warm", &server.url(), &n], &home.path().join("chromium-warm"));
    drop(server);
    report(&format!("warm: one server and browser, {MEMORIES} memories"), &warm[1..]);
}

fn report(label: &str, loads: &[Value]) {
    println!("{label} (n={}, ms from navigation start):", loads.len());
    // The page preloads the dashboard's API calls; more than one fetch of
    // /api/stats means app.js did not take the preloaded answer.
    let refetched = loads.iter().filter(|l| l["n_stats"].as_u64() != Some(1)).count();
    if refetched > 0 {
        println!("  /api/stats fetched twice (preload not used) in {refetched} loads");
    }
    for (key, what) in PHASES {
        let mut v: Vec<f64> = loads.iter().filter_map(|l| l[key].as_f64()).collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        println!("  {what:<42} p50 {:>6.1}  p95 {:>6.1}  max {:>6.1}", at(0.5), at(0.95), v[v.len() - 1]);
    }
}

/// `target/web-venv`'s Python with Selenium (made with pip if missing), when
/// a chromedriver is installed.
fn python_with_selenium(target: &Path) -> Option<PathBuf> {
    let driver = std::env::var_os("CHROMEDRIVER").map_or_else(|| PathBuf::from("/usr/bin/chromedriver"), PathBuf::from);
    if !driver.exists() {
        eprintln!("no chromedriver at {} (apt-get install chromium chromium-driver)", driver.display());
        return None;
    }
    let venv = target.join("web-venv");
    let python = venv.join("bin/python");
    let has = || Command::new(&python).args(["-c", "import selenium"]).output().is_ok_and(|o| o.status.success());
    if !has() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success())
            && Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "selenium"])
                .status()
                .is_ok_and(|s| s.success());
        if !made || !has() {
            eprintln!("could not install Selenium into {}", venv.display());
            return None;
        }
    }
    Some(python)
}
