//! The session driver: plays agent sessions through Engram's real hooks, the
//! way a harness does, in a throw-away world.
//!
//! A [`World`] is one user's machine in a temporary directory: `HOME`,
//! `ENGRAM_HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and the `XDG_*` folders
//! all point inside it, and `engram-ingestor install claude` has written the
//! hooks into its Claude Code settings. [`World::project`] makes project
//! folders with real markers (a `git init`ed repository with its remote,
//! `package.json` and a lockfile, `Cargo.toml`, ...). A
//! [`claude::Session`] then plays a Claude Code session in one of them: it
//! appends the transcript records Claude Code writes (one per content block,
//! `toolUseResult`, compact boundaries, the hooks' `hook_additional_context`
//! attachments) to `<config>/projects/<encoded cwd>/<id>.jsonl`, and at each
//! hook point runs every command the settings register for that event (and,
//! for tools, whose matcher matches), with `sh -c`, the session's cwd, the
//! hook JSON on stdin and the handler's timeout ([`hooks`]). What a hook puts
//! into the agent's context is read from its stdout by Claude Code's rules.
//!
//! Between sessions, [`World::settle`] waits until Engram's detached workers
//! (ingestion, the read hooks' recorder, anything else holding a lock in the
//! data home's `hooks/`) are idle: the time that passes between two real
//! sessions. Nothing here reads Engram's database: a driver sees what an
//! agent receives and what the CLI lists ([`World::memories`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use tests::driver::claude::ToolUse;
//! use tests::driver::{Binaries, GitSpec, ProjectSpec, SETTLE_TIMEOUT, World};
//!
//! # fn main() -> tests::driver::Result<()> {
//! let world = World::new(Binaries::built())?;
//! let web = world.project(&ProjectSpec {
//!     dir: "web".into(),
//!     files: [("package.json".into(), r#"{"name":"web"}"#.into())].into(),
//!     git: Some(GitSpec { remote: Some("git@github.com:acme/web.git".into()), ..GitSpec::default() }),
//! })?;
//! for day in 0..5 {
//!     let mut s = world.claude_session(&format!("00000000-0000-4000-8000-{day:012}"), &web);
//!     let injected = s.start("startup")?; // what SessionStart put into the context
//!     s.prompt("install the dependencies")?;
//!     s.tool(&ToolUse::bash("npm install", 1, "npm ERR! code EUSAGE"))?;
//!     s.prompt("no, this repo uses pnpm")?;
//!     s.tool(&ToolUse::bash("pnpm install", 0, "Done in 1.2s"))?;
//!     s.end("prompt_input_exit")?;
//!     world.settle(SETTLE_TIMEOUT);
//!     world.advance(Duration::from_secs(86_400));
//!     let _ = (injected, world.memories()?);
//! }
//! # Ok(())
//! # }
//! ```

pub mod claude;
pub mod hooks;
mod project;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use hooks::{HookCall, HookSet};
pub use project::{GitSpec, ProjectSpec};

/// A driver error: what failed, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error(e.to_string())
    }
}

/// Driver results.
pub type Result<T> = std::result::Result<T, Error>;

/// Builds an [`Error`] from a format string.
macro_rules! err {
    ($($t:tt)*) => { $crate::driver::Error(format!($($t)*)) };
}
pub(crate) use err;

/// The two Engram binaries the hooks run.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `engram-ingestor`.
    pub ingestor: PathBuf,
    /// `engram-scorer`.
    pub scorer: PathBuf,
}

impl Binaries {
    /// Both binaries, built (or brought up to date) once per process in the
    /// caller's profile and target directory.
    pub fn built() -> &'static Binaries {
        static BINS: OnceLock<Binaries> = OnceLock::new();
        BINS.get_or_init(|| Binaries {
            ingestor: crate::build_bin("ingestor", "engram-ingestor"),
            scorer: crate::build_bin("scorer", "engram-scorer"),
        })
    }
}

/// One memory as `engram-ingestor memory list --json` lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ListedMemory {
    /// Its id.
    pub id: String,
    /// Its text.
    pub content: String,
    /// Its type.
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Its project, if any.
    pub project: Option<String>,
}

/// A user's machine in a temporary directory, with Engram installed into
/// Claude Code (see the module docs).
#[derive(Debug)]
pub struct World {
    dir: tempfile::TempDir,
    bins: Binaries,
    hooks: HookSet,
    /// Milliseconds added to the wall clock for the transcripts' times.
    clock_offset: AtomicI64,
}

/// How long [`World::settle`] waits by default.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

impl World {
    /// A fresh world with `engram-ingestor install claude` done.
    pub fn new(bins: &Binaries) -> Result<World> {
        let dir = tempfile::Builder::new().prefix("engram-world-").tempdir()?;
        let w = World { dir, bins: bins.clone(), hooks: HookSet::default(), clock_offset: AtomicI64::new(0) };
        for d in [w.code_dir(), w.claude_dir(), w.root().join("codex"), w.root().join("xdg")] {
            std::fs::create_dir_all(d)?;
        }
        w.run_ok(w.ingestor(&["install", "claude"]))?;
        let hooks = HookSet::load(&w.claude_dir().join("settings.json"))?;
        Ok(World { hooks, ..w })
    }

    /// The time the transcripts record and every Engram process reads (its
    /// commands get it as `ENGRAM_NOW`, see [`shared::time::Ts::now`]): the
    /// wall clock plus what [`World::advance`] added.
    pub fn now(&self) -> shared::time::Ts {
        shared::time::Ts::now().plus_millis(self.clock_offset.load(Ordering::Relaxed))
    }

    /// Moves the transcripts' clock forward (a day between two sessions,
    /// a week of use).
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.clock_offset.fetch_add(ms, Ordering::Relaxed);
    }

    /// The world's root (the user's `HOME`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Engram's data home (`ENGRAM_HOME`).
    pub fn engram_home(&self) -> PathBuf {
        self.root().join("engram")
    }

    /// Claude Code's configuration directory (`CLAUDE_CONFIG_DIR`).
    pub fn claude_dir(&self) -> PathBuf {
        self.root().join("claude")
    }

    /// Where project folders are made (`~/code`).
    pub fn code_dir(&self) -> PathBuf {
        self.root().join("code")
    }

    /// The hooks install wrote into Claude Code's settings.
    pub fn hooks(&self) -> &HookSet {
        &self.hooks
    }

    /// The user's environment: what a harness and its hooks inherit.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let root = self.root();
        vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"))),
            ("HOME", root.into()),
            ("ENGRAM_HOME", self.engram_home().into()),
            ("CLAUDE_CONFIG_DIR", self.claude_dir().into()),
            ("CODEX_HOME", root.join("codex").into()),
            ("GEMINI_DIR", root.join("gemini").into()),
            ("XDG_DATA_HOME", root.join("xdg").into()),
            ("XDG_CONFIG_HOME", root.join("xdg/config").into()),
            ("XDG_CACHE_HOME", root.join("xdg/cache").into()),
            ("XDG_STATE_HOME", root.join("xdg/state").into()),
            ("TZ", "UTC".into()),
            // The world's clock: hooks, and the workers and trainer runs they start.
            (shared::time::CLOCK_ENV, self.now().millis().to_string().into()),
            ("LANG", "C.UTF-8".into()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ]
    }

    /// A command run as the user runs it (the world's environment only).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear().envs(self.env()).current_dir(self.root()).stdin(Stdio::null());
        c
    }

    /// `engram-ingestor ARGS`.
    pub fn ingestor(&self, args: &[&str]) -> Command {
        let mut c = self.command(&self.bins.ingestor);
        c.args(args);
        c
    }

    /// `engram-scorer ARGS`.
    pub fn scorer(&self, args: &[&str]) -> Command {
        let mut c = self.command(&self.bins.scorer);
        c.args(args);
        c
    }

    /// Runs `cmd`; its stdout when it succeeded, else an error with its output.
    pub fn run_ok(&self, mut cmd: Command) -> Result<String> {
        let out: Output = cmd.output().map_err(|e| err!("{cmd:?}: {e}"))?;
        if !out.status.success() {
            return Err(err!(
                "{:?} {:?} failed ({}):\n{}{}",
                cmd.get_program(),
                cmd.get_args().collect::<Vec<_>>(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        String::from_utf8(out.stdout).map_err(|e| err!("{cmd:?}: stdout is not UTF-8: {e}"))
    }

    /// Makes a project folder (see [`ProjectSpec`]); returns its path.
    pub fn project(&self, spec: &ProjectSpec) -> Result<PathBuf> {
        project::create(self, spec)
    }

    /// Starts playing a Claude Code session with id `id` in `cwd` (nothing
    /// is sent until its first step).
    pub fn claude_session(&self, id: &str, cwd: &Path) -> claude::Session<'_> {
        claude::Session::new(self, id, cwd)
    }

    /// Waits until Engram's background work is done: no ingestion queued,
    /// nothing spooled, no lock in the data home's `hooks/` held. `false` if
    /// still busy after `timeout`.
    pub fn settle(&self, timeout: Duration) -> bool {
        let hooks = self.engram_home().join("hooks");
        let start = Instant::now();
        // The workers coalesce for a moment before they take their queue.
        std::thread::sleep(Duration::from_millis(20));
        loop {
            if idle(&hooks) {
                return true;
            }
            if start.elapsed() > timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Every live memory, as `engram-ingestor memory list --json --limit 0`
    /// lists it.
    pub fn memories(&self) -> Result<Vec<ListedMemory>> {
        let text = self.run_ok(self.ingestor(&["memory", "list", "--json", "--limit", "0"]))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| err!("memory list --json: {e}:\n{text}"))?;
        let items = v.as_array().ok_or_else(|| err!("memory list --json is not an array: {text}"))?;
        let field = |m: &Value, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        Ok(items
            .iter()
            .map(|m| ListedMemory {
                id: field(m, "id").unwrap_or_default(),
                content: field(m, "content").unwrap_or_default(),
                memory_type: field(m, "type").unwrap_or_default(),
                project: field(m, "project"),
            })
            .collect())
    }
}

/// Whether nothing in `hooks/` (the data home's) says work is pending.
fn idle(hooks: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(hooks) else { return true };
    let mut locks = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            // The spool: events waiting for the tape lock.
            if std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some()) {
                return false;
            }
        } else if name.ends_with(".lock") {
            locks.push(path);
        } else if name.contains(".queue") && meta.len() > 0 {
            return false;
        }
    }
    // Only probe the locks once no queue is pending: a worker that releases
    // its lock exits when its queue is empty.
    locks.iter().all(|l| matches!(shared::fsutil::FileLock::try_exclusive(l), Ok(Some(_))))
}
