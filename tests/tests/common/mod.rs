//! Helpers of the end-to-end tests: the built binaries, and a temporary
//! world (data home plus harness directories) to run them in.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The `engram-ingestor` binary, built once per test process.
pub fn ingestor_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| tests::build_bin("ingestor", "engram-ingestor"))
}

/// The ingestor's own test fixtures (written by this project).
pub fn ingestor_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ingestor/tests/data").join(name)
}

/// A temporary world: `ENGRAM_HOME`, `HOME` and every harness directory
/// point inside it, so nothing outside is read or written.
pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        World { dir: tempfile::tempdir().unwrap() }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("engram")
    }

    pub fn claude_projects(&self) -> PathBuf {
        self.root().join("claude/projects")
    }

    pub fn codex_sessions(&self) -> PathBuf {
        self.root().join("codex/sessions")
    }

    pub fn gemini_tmp(&self) -> PathBuf {
        self.root().join("gemini/tmp")
    }

    pub fn opencode(&self) -> PathBuf {
        self.root().join("xdg/opencode")
    }

    /// A command with the world's environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = tests::isolated(ingestor_bin(), self.root());
        // In the world, not in the worktree the tests run from (a project:
        // `memory add` would file memories under it).
        c.current_dir(self.root())
            .args(args)
            .env("ENGRAM_HOME", self.home())
            .env("CLAUDE_CONFIG_DIR", self.root().join("claude"))
            .env("CODEX_HOME", self.root().join("codex"))
            .env("GEMINI_DIR", self.root().join("gemini"))
            .env("XDG_DATA_HOME", self.root().join("xdg"))
            .env("XDG_CONFIG_HOME", self.root().join(".config"))
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        tests::success_stdout(args, self.run(args))
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let text = self.ok(args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{text}"))
    }

    pub fn scan(&self) -> Value {
        self.json(&["scan", "--json"])
    }

    /// The tape log's last position (0 when empty).
    pub fn last_lsn(&self) -> u64 {
        let segs = self.json(&["tapes", "--json"]);
        segs.as_array().unwrap().iter().map(|s| s["last_lsn"].as_u64().unwrap()).max().unwrap_or(0)
    }

    /// Every stored event as JSON lines, from `tapes show <segment> --json`.
    pub fn tape_dump(&self) -> String {
        let segs = self.json(&["tapes", "--json"]);
        let mut out = String::new();
        for s in segs.as_array().unwrap() {
            if s["events"].as_u64().unwrap() > 0 {
                out.push_str(&self.ok(&["tapes", "show", s["name"].as_str().unwrap(), "--json"]));
            }
        }
        out
    }

    /// Every stored event, decoded as JSON.
    pub fn tape_events(&self) -> Vec<Value> {
        self.tape_dump().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    pub fn write(&self, path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    pub fn append(&self, path: &Path, bytes: &[u8]) {
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
    }

    /// Copies a file or a directory tree (made writable).
    pub fn copy(&self, from: &Path, to: &Path) {
        if from.is_dir() {
            for entry in std::fs::read_dir(from).unwrap() {
                let entry = entry.unwrap();
                self.copy(&entry.path(), &to.join(entry.file_name()));
            }
        } else {
            self.write(to, &std::fs::read(from).unwrap());
        }
    }

    /// All bytes of the projection files (every generation, WAL included).
    pub fn database_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.home().join("db")).unwrap() {
            out.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        out
    }
}

/// Sum of `summary.harnesses.<h>.<field>` (0 when missing).
pub fn count(summary: &Value, harness: &str, field: &str) -> u64 {
    summary["harnesses"][harness][field].as_u64().unwrap_or(0)
}

/// `summary.harnesses.<h>.kinds.<kind>`.
pub fn kind(summary: &Value, harness: &str, kind: &str) -> u64 {
    summary["harnesses"][harness]["kinds"][kind].as_u64().unwrap_or(0)
}

/// Whether `hay` contains `needle`, ASCII case-insensitively.
pub fn contains_ignore_case(hay: &[u8], needle: &str) -> bool {
    let n = needle.as_bytes();
    hay.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// The `engram-scorer` binary, built once per test process.
pub fn scorer_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| tests::build_bin("scorer", "engram-scorer"))
}

impl World {
    /// An `engram-scorer` command with the world's environment.
    pub fn scorer(&self, args: &[&str]) -> Command {
        let mut c = self.cmd(args);
        let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> =
            c.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
        c = tests::isolated(scorer_bin(), self.root());
        c.current_dir(self.root()).args(args).envs(envs).stdin(Stdio::null());
        c
    }

    /// Runs a hook binary with `input` on stdin; returns its output.
    pub fn hook(&self, mut cmd: Command, input: &[u8]) -> Output {
        use std::io::Write;
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Waits until the read-side hooks' recorder has appended everything
    /// they spooled (no spool file left, its lock free).
    pub fn wait_for_recorder(&self) {
        let paths = shared::base::paths::Paths::at(self.home());
        let lock = shared::domain::hook::recorder_lock(&paths);
        let start = std::time::Instant::now();
        loop {
            let idle = shared::base::fsutil::FileLock::try_exclusive(&lock).map_or(true, |l| l.is_some());
            if idle && !shared::domain::hook::spool_pending(&paths) {
                return;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(60), "the hooks' recorder did not finish");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The projection, opened for queries.
    pub fn store(&self) -> shared::storage::store::Store {
        shared::storage::store::Store::open(&self.home().join("engram.db")).unwrap()
    }

    /// One integer from the projection.
    pub fn count(&self, sql: &str) -> i64 {
        self.store().conn().query_row(sql, [], |r| r.get(0)).unwrap()
    }
}

/// A Python with the `mcp` package: `<target>/mcp-venv`, created and filled
/// with pip on first use. `None` (with a message) when that cannot be done
/// locally; a failure under `CI`.
pub fn python_with_mcp() -> Option<&'static Path> {
    static PY: OnceLock<Option<PathBuf>> = OnceLock::new();
    PY.get_or_init(|| tests::python_with("mcp-venv", "mcp", "mcp")).as_deref()
}

/// Runs `calls` (tool name, arguments) in one session of the official MCP
/// client against `engram-scorer mcp` in `w`; returns each call's result
/// (`structuredContent` of a success, else `{"isError": true, "text": …}`
/// or `{"error": …}`). `None` (skip) when the client cannot be installed locally.
pub fn mcp_calls(w: &World, calls: &[(&str, Value)]) -> Option<Vec<Value>> {
    use std::io::Write as _;
    let python = python_with_mcp()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_calls.py");
    let list: Vec<Value> =
        calls.iter().map(|(name, args)| serde_json::json!({"name": name, "arguments": args})).collect();
    let mut child = tests::isolated(python, w.root())
        .arg(&script)
        .arg(scorer_bin())
        .env("ENGRAM_HOME", w.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(Value::Array(list).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the MCP client failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    Some(
        results
            .into_iter()
            .map(|r| match r.get("result") {
                Some(res) if res["isError"] == false => res["structuredContent"].clone(),
                Some(res) => serde_json::json!({"isError": true, "text": res["content"][0]["text"]}),
                None => serde_json::json!({"error": r["error"]}),
            })
            .collect(),
    )
}
