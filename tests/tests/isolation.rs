//! Tests never write into the user's home (issue 15 item 7: a Chromium
//! profile once landed there): every subprocess a test starts goes through
//! `tests::isolated`, which points `HOME`, the XDG directories and
//! `ENGRAM_HOME` into the test's own temporary directory. This test reads
//! the sources of the `tests` package and fails on any other spawn, unless
//! a `// not isolated: why` comment on the line before says why it may; and
//! a Python client that starts a browser gives it a profile folder.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the tests package") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "py") {
            out.push(path);
        }
    }
}

#[test]
fn every_subprocess_of_a_test_runs_in_the_test_s_own_home() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests"] {
        sources(&root.join(dir), &mut files);
    }
    let helper = root.join("src/lib.rs");
    let this = root.join("tests/isolation.rs");
    let spawn = ["Command", "::new("].concat();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != helper && **f != this) {
        let text = std::fs::read_to_string(file).expect("a UTF-8 source");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let allowed = i > 0 && lines[i - 1].trim_start().starts_with("// not isolated:");
            if line.contains(&spawn) && !allowed {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
        let browser = ["webdriver", ".Chrome("].concat();
        if text.contains(&browser) {
            assert!(text.contains("--user-data-dir="), "{} starts a browser without a profile folder", file.display());
        }
    }
    assert!(found.is_empty(), "subprocesses started without tests::isolated:\n{}", found.join("\n"));
    assert!(files.len() > 20, "the sources were found ({} files)", files.len());
}

#[test]
fn an_isolated_command_sees_only_its_own_home() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = tests::isolated("sh", dir.path()).args(["-c", "env"]).output().expect("run sh");
    assert!(out.status.success());
    let env = String::from_utf8_lossy(&out.stdout);
    for var in ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "ENGRAM_HOME"] {
        let value = env.lines().find_map(|l| l.strip_prefix(&format!("{var}="))).unwrap_or_default();
        assert!(Path::new(value).starts_with(dir.path()), "{var}={value} is outside the test's directory");
    }
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or_default();
        let own = ["HOME", "ENGRAM_HOME", "PWD", "SHLVL", "_"].contains(&name) || name.starts_with("XDG_");
        assert!(own || tests::KEPT_ENV.contains(&name), "{name} leaked from the test's environment");
    }
}
