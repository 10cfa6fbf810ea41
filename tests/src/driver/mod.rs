//! The session driver: plays agent sessions through Engram's real hooks, the
//! way a harness does, in a throw-away world.
//!
//! A [`World`] is one user's machine in a temporary directory: `HOME`,
//! `ENGRAM_HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and the `XDG_*` folders
//! all point inside it, and `engram-ingestor install claude` and `install
//! codex` have written the hooks into the harnesses' settings. [`World::project`] makes project
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
//! [`codex::Session`] plays a Codex CLI session the same way (a rollout
//! under `$CODEX_HOME/sessions/`, the hooks of `install codex`); both are
//! [`Player`]s.
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
pub mod codex;
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
    /// The session it was learned from (`harness:id`), if any.
    pub source_session: Option<String>,
}

/// A harness whose sessions the driver plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Harness {
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
}

impl Harness {
    /// Engram's key of a session of this harness (`claude:<id>`).
    pub fn session_key(self, id: &str) -> String {
        format!("{}:{id}", self.name())
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }

    /// From the lower-case name.
    pub fn from_name(s: &str) -> Option<Harness> {
        match s {
            "claude" => Some(Harness::Claude),
            "codex" => Some(Harness::Codex),
            _ => None,
        }
    }
}

/// A session being played, whatever the harness: each step writes what the
/// harness writes and runs the hooks it runs, returning the hook calls.
pub trait Player {
    /// The harness's session id.
    fn id(&self) -> &str;
    /// Its working directory.
    fn cwd(&self) -> &Path;
    /// Its transcript (rollout) file.
    fn transcript(&self) -> &Path;
    /// `SessionStart` with `source` (`startup`, `resume`, `compact`, ...).
    fn start(&mut self, source: &str) -> Result<Vec<HookCall>>;
    /// The user submits a prompt (an open turn ends first).
    fn prompt(&mut self, text: &str) -> Result<Vec<HookCall>>;
    /// The agent says something (no hook).
    fn say(&mut self, text: &str) -> Result<()>;
    /// The agent calls a tool.
    fn tool(&mut self, tool: &claude::ToolUse) -> Result<Vec<HookCall>>;
    /// The context is compacted (an open turn ends first).
    fn compact(&mut self, trigger: &str, summary: &str) -> Result<Vec<HookCall>>;
    /// The agent's turn ends, if one is open.
    fn stop(&mut self) -> Result<Vec<HookCall>>;
    /// The session ends.
    fn end(&mut self, reason: &str) -> Result<Vec<HookCall>>;
}

/// A user's machine in a temporary directory, with Engram installed into
/// Claude Code and Codex (see the module docs).
#[derive(Debug)]
pub struct World {
    dir: tempfile::TempDir,
    bins: Binaries,
    hooks: HookSet,
    codex_hooks: HookSet,
    /// Milliseconds added to the wall clock for the transcripts' times.
    clock_offset: AtomicI64,
}

/// How long [`World::settle`] waits by default.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

impl World {
    /// A fresh world with `engram-ingestor install claude` done.
    pub fn new(bins: &Binaries) -> Result<World> {
        let dir = tempfile::Builder::new().prefix("engram-world-").tempdir()?;
        let w = World {
            dir,
            bins: bins.clone(),
            hooks: HookSet::default(),
            codex_hooks: HookSet::default(),
            clock_offset: AtomicI64::new(0),
        };
        for d in [w.code_dir(), w.claude_dir(), w.codex_dir(), w.root().join("xdg")] {
            std::fs::create_dir_all(d)?;
        }
        w.run_ok(w.ingestor(&["install", "claude"]))?;
        w.run_ok(w.ingestor(&["install", "codex"]))?;
        let hooks = HookSet::load(&w.claude_dir().join("settings.json"))?;
        let codex_hooks = HookSet::load(&w.codex_dir().join("hooks.json"))?;
        Ok(World { hooks, codex_hooks, ..w })
    }

    /// The time the transcripts record and every Engram process reads (its
    /// commands get it as `ENGRAM_NOW`, see [`shared::base::time::Ts::now`]): the
    /// wall clock plus what [`World::advance`] added.
    pub fn now(&self) -> shared::base::time::Ts {
        shared::base::time::Ts::now().plus_millis(self.clock_offset.load(Ordering::Relaxed))
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

    /// Codex's home (`CODEX_HOME`).
    pub fn codex_dir(&self) -> PathBuf {
        self.root().join("codex")
    }

    /// Where project folders are made (`~/code`).
    pub fn code_dir(&self) -> PathBuf {
        self.root().join("code")
    }

    /// The hooks install wrote into Claude Code's settings.
    pub fn hooks(&self) -> &HookSet {
        &self.hooks
    }

    /// The hooks install wrote into Codex's `hooks.json`.
    pub fn codex_hooks(&self) -> &HookSet {
        &self.codex_hooks
    }

    /// The user's environment: what a harness and its hooks inherit.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let root = self.root();
        vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"))),
            ("HOME", root.into()),
            ("ENGRAM_HOME", self.engram_home().into()),
            ("CLAUDE_CONFIG_DIR", self.claude_dir().into()),
            ("CODEX_HOME", self.codex_dir().into()),
            ("GEMINI_DIR", root.join("gemini").into()),
            ("XDG_DATA_HOME", root.join("xdg").into()),
            ("XDG_CONFIG_HOME", root.join("xdg/config").into()),
            ("XDG_CACHE_HOME", root.join("xdg/cache").into()),
            ("XDG_STATE_HOME", root.join("xdg/state").into()),
            ("TZ", "UTC".into()),
            // The world's clock: hooks, and the workers and trainer runs they start.
            (shared::base::time::CLOCK_ENV, self.now().millis().to_string().into()),
            ("LANG", "C.UTF-8".into()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ]
    }

    /// A command run as the user runs it (the world's environment only).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = crate::isolated(program, self.root());
        c.envs(self.env()).current_dir(self.root()).stdin(Stdio::null());
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

    /// Starts playing a Codex session with id `id` in `cwd`.
    pub fn codex_session(&self, id: &str, cwd: &Path) -> codex::Session<'_> {
        codex::Session::new(self, id, cwd)
    }

    /// A session of `harness` (boxed, for code that plays either).
    pub fn session(&self, harness: Harness, id: &str, cwd: &Path) -> Box<dyn Player + '_> {
        match harness {
            Harness::Claude => Box::new(self.claude_session(id, cwd)),
            Harness::Codex => Box::new(self.codex_session(id, cwd)),
        }
    }

    /// An ended session of `harness` resumed (same id, same transcript).
    pub fn resume(&self, harness: Harness, id: &str, cwd: &Path, transcript: &Path) -> Result<Box<dyn Player + '_>> {
        Ok(match harness {
            Harness::Claude => Box::new(claude::Session::resume(self, id, cwd)?),
            Harness::Codex => Box::new(codex::Session::resume(self, id, cwd, transcript)?),
        })
    }

    /// Waits until Engram's background work is done: no ingestion queued,
    /// nothing in the hooks' spool, no lock in the data home's `hooks/`
    /// held. `false` if work was still pending after `timeout`, or a lock
    /// stayed held for [`LOCK_HELD_LONG`] with nothing pending (a holder
    /// that never lets go, which a real user would not wait for either).
    pub fn settle(&self, timeout: Duration) -> bool {
        let hooks = self.engram_home().join("hooks");
        let start = Instant::now();
        let mut locked_since: Option<Instant> = None;
        // The workers coalesce for a moment before they take their queue.
        std::thread::sleep(Duration::from_millis(20));
        loop {
            match busy(&hooks) {
                Busy::No => return true,
                Busy::Pending => locked_since = None,
                Busy::Locked => {
                    if locked_since.get_or_insert_with(Instant::now).elapsed() > LOCK_HELD_LONG {
                        return false;
                    }
                }
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
                source_session: field(m, "source_session"),
            })
            .collect())
    }
}

/// A UUID-shaped id of `version` ('4' random-looking, '7' Codex's
/// time-ordered look) derived from a seed, a purpose and a counter: the
/// same script always writes the same ids.
pub(crate) fn derived_uuid(seed: &str, what: &str, n: u64, version: char) -> String {
    let h = blake3::hash(format!("{seed}\0{what}\0{n}").as_bytes());
    let hex: String = h.as_bytes()[..16].iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{version}{}-8{}-{}", &hex[..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

/// How long [`World::settle`] waits on a lock held with nothing pending.
pub const LOCK_HELD_LONG: Duration = Duration::from_secs(10);

/// What the data home's `hooks/` says.
enum Busy {
    /// Nothing pending, no lock held.
    No,
    /// A queue or the spool holds work.
    Pending,
    /// Only a lock is held.
    Locked,
}

fn busy(hooks: &Path) -> Busy {
    let Ok(entries) = std::fs::read_dir(hooks) else { return Busy::No };
    let mut locks = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            // The spool: events waiting for the tape lock.
            if name == "spool" && std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some()) {
                return Busy::Pending;
            }
        } else if name.ends_with(".lock") {
            locks.push(path);
        } else if name.contains(".queue") && meta.len() > 0 {
            return Busy::Pending;
        }
    }
    // Only probe the locks once no queue is pending: a worker that releases
    // its lock exits when its queue is empty.
    if locks.iter().all(|l| matches!(shared::base::fsutil::FileLock::try_exclusive(l), Ok(Some(_)))) {
        Busy::No
    } else {
        Busy::Locked
    }
}
