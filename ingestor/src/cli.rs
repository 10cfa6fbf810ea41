//! The command line of `engram-ingestor`: clap definitions and the dispatch
//! to the library. Requested output goes to the given writer (stdout), logs
//! to stderr, progress bars to stderr on a terminal only.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::memory::queries::MemoryFilter;
use shared::storage::event::MemoryType;

use crate::adapter::WRITER;
use crate::adapters::Harness;
use crate::error::{EngramContext, Error};
use crate::memories::{self, MemoryChange, NewMemory, Saved};
use crate::scan::{self, ScanOptions};
use crate::{render, tapes};
use shared::domain::env::ops as env_ops;

/// `engram-ingestor`: records agent sessions as tapes, keeps memories.
#[derive(Debug, Parser)]
#[command(name = "engram-ingestor", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read new content of every harness log into the tapes and extract memories.
    Scan(ScanArgs),
    /// Add, change, list and show memories.
    Memory {
        /// What to do.
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Rebuild the database from the tapes alone.
    Replay,
    /// List segments (default), show events, verify checksums.
    Tapes(TapesArgs),
    /// Seal, remove forgotten memories' text from the tapes, rebuild the database.
    Compact,
    /// The first run: ingest your agent history (or a demo corpus), show what
    /// would be injected here and why, train, report, and say what is next.
    Quickstart(QuickstartArgs),
    /// Remove the demo data an older quickstart mixed into this data home
    /// (its memories are forgotten; `compact` then erases their text).
    RemoveDemo {
        /// Say what would be removed; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write Engram's hooks and MCP server into Claude Code's or Codex's settings.
    Install(InstallArgs),
    /// Remove exactly what install added.
    Uninstall(InstallArgs),
    /// Merge conceptual duplicates (seed 000's dedup pipeline; an LLM judge only if configured).
    Dedup {
        /// Report what would be merged; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// At most this many passes (default: knowledge.dedup.max_passes).
        #[arg(long)]
        max_passes: Option<u32>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record a session no adapter covers: run a command (`record -- CMD ARGS…`) or read a transcript (`--stdin`).
    Record {
        /// Read a transcript from stdin (seed 003 tape lines, or plain text).
        #[arg(long)]
        stdin: bool,
        /// Record into this session (harness:id) instead of a new one.
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
        /// The command and its arguments (after --).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Declare that the code at TO came from FROM (a `span.link`): FILE:START-END each.
    Link {
        /// Where the code was.
        from: String,
        /// Where it is now.
        to: String,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
        /// The session making the link (harness:id).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
    },
    /// The extractor model (`[extractor]` in config.toml).
    Extractor {
        /// What to do.
        #[command(subcommand)]
        command: ExtractorCommand,
    },
    /// What Engram knows of sessions.
    Session {
        /// What to do.
        #[command(subcommand)]
        command: SessionCommand,
    },
    /// A write-side hook of Claude Code or Codex (hook JSON on stdin; prints nothing, exits 0).
    Hook {
        /// post-tool-use, stop, session-end or pre-compact.
        #[arg(value_parser = parse_write_event)]
        event: HookTarget,
        /// The harness calling (claude or codex); guessed from the input when absent.
        #[arg(long)]
        harness: Option<String>,
        /// `ingest` only: the queue the worker drains (one per transcript).
        #[arg(long, hide = true)]
        lane: Option<String>,
    },
}

/// `extractor` subcommands.
#[derive(Debug, Subcommand)]
pub enum ExtractorCommand {
    /// Every user sentence of the recorded sessions (or of one) as
    /// extraction weighed it: its cues and whether the rules kept it, to
    /// see why a sentence became a memory or did not. One JSON object per line.
    Sentences {
        /// harness:id, or the harness's id alone (default: every session).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
    },
    /// Show what the configured model returns for one recorded session: the
    /// request sent, the raw answer, the memories parsed or why the answer
    /// was refused. Records nothing; counts one call against the daily budget.
    Test {
        /// harness:id (default: the latest session with something to learn from).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `session` subcommands.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Seed 000's session audit: memories shown, repository and tags, the
    /// transcript and how far it was read (one session, or the latest ones).
    Audit {
        /// harness:id (or the harness's id alone); the latest sessions when absent.
        session: Option<String>,
        /// Sessions listed without SESSION.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `hook` handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookTarget {
    /// A harness event.
    Event(shared::domain::hook::HookEvent),
    /// The detached ingestion worker the hooks start.
    Ingest,
}

fn parse_write_event(s: &str) -> Result<HookTarget, String> {
    use shared::domain::hook::HookEvent;
    if s == "ingest" {
        return Ok(HookTarget::Ingest);
    }
    match HookEvent::from_arg(s) {
        Some(e) if !e.is_read_side() => Ok(HookTarget::Event(e)),
        Some(e) => Err(format!("{} is a read-side hook: use `engram-scorer hook {}`", e.arg(), e.arg())),
        None => Err(format!("unknown hook {s:?}; one of: post-tool-use, stop, session-end, pre-compact")),
    }
}

/// `quickstart` options.
#[derive(Debug, Args)]
pub struct QuickstartArgs {
    /// Use the built-in demo corpus even if agent history exists.
    #[arg(long)]
    pub demo: bool,
    /// The data home the demo runs in (default: DATA_HOME/demo-home, apart
    /// from real memories; give the data home itself to mix them).
    #[arg(long, value_name = "DIR")]
    pub demo_home: Option<PathBuf>,
    /// Do not run the trainer.
    #[arg(long)]
    pub no_train: bool,
    /// Preview the session start of this directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Where engram-trainer is (default: next to this binary).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
}

/// `install` / `uninstall` options.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// claude or codex.
    #[arg(value_parser = parse_target)]
    pub harness: crate::install::Target,
    /// Install into this project's settings instead of the user's.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where engram-scorer and engram-ingestor are (default: next to this binary).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Claude Code: do not add the plugin with the /remember, /recall, /stash… skills.
    #[arg(long)]
    pub no_plugin: bool,
    /// Also run engram-trainer every 30 minutes: a systemd user timer, or a
    /// crontab line (default: systemd when `systemctl --user` answers). `uninstall` removes it.
    #[arg(long, value_name = "KIND", num_args = 0..=1, default_missing_value = "auto")]
    pub schedule: Option<String>,
}

fn parse_target(s: &str) -> Result<crate::install::Target, String> {
    crate::install::Target::from_name(&s.to_lowercase())
        .ok_or_else(|| format!("unknown harness {s:?}; one of: claude, codex"))
}

fn bin_dir(given: Option<PathBuf>) -> Result<PathBuf, Error> {
    match given {
        Some(d) => Ok(std::path::absolute(&d).unwrap_or(d)),
        None => {
            let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
            let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
            Ok(shared::base::fsutil::parent_dir(&exe))
        }
    }
}

/// `scan` options.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only this harness (claude, codex, gemini, opencode; specstory, cursor or
    /// copilot for SpecStory exports); repeatable.
    #[arg(long = "harness", value_name = "NAME", value_parser = parse_harness)]
    pub harnesses: Vec<Harness>,
    /// Only logs modified since DATE (2026-01-31, an RFC 3339 time, or 7d, 12h, 30m ago).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Scan this file or directory instead of the standard locations; repeatable.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// `memory` subcommands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Add a memory; prints its id.
    Add {
        /// The text.
        text: String,
        /// Type: fact, decision, preference, pattern, issue, context, discovery, correction, convention, gotcha, struggle.
        #[arg(long = "type", default_value = "fact", value_parser = parse_type)]
        memory_type: MemoryType,
        /// 0..=1.
        #[arg(long, default_value_t = 0.7)]
        importance: f32,
        /// Project it belongs to: a known project's key, or a name only one
        /// known project has (an unknown or ambiguous name is an error that
        /// lists the candidates). Without it: the project of the current
        /// directory when Engram knows that project (it has recorded a
        /// session there), else none (a global memory). The project chosen
        /// is printed on stderr.
        #[arg(long)]
        project: Option<String>,
        /// A tag; repeatable (at most 32 tags of at most 64 characters each).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Pin it: always a candidate.
        #[arg(long)]
        pin: bool,
        /// A memory it derives from (a `derives_from` edge); repeatable.
        #[arg(long = "source", value_name = "ID")]
        sources: Vec<String>,
        /// Save it as given: no duplicate or conflict check, no graph edges.
        #[arg(long)]
        no_check: bool,
    },
    /// Change a memory's text, type, importance, tags or project.
    Update {
        /// Memory id.
        id: String,
        /// New text.
        #[arg(long)]
        text: Option<String>,
        /// New type.
        #[arg(long = "type", value_parser = parse_type)]
        memory_type: Option<MemoryType>,
        /// New importance.
        #[arg(long)]
        importance: Option<f32>,
        /// Replace the tags with these; repeatable (at most 32 of at most 64 characters).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// New project: a known project's key, or a name only one known project has.
        #[arg(long)]
        project: Option<String>,
        /// Its only category from now on (a path such as development/frontend/react).
        #[arg(long)]
        category: Option<String>,
        /// Its prerequisites, whole, as JSON: {"os": [...], "repos": [...], "paths": [...],
        /// "mcp_servers": [...], "tags": [...]} ("{}" clears them).
        #[arg(long, value_name = "JSON")]
        prerequisites: Option<String>,
    },
    /// Add a memory to categories or remove it from them.
    Categorize {
        /// Memory id.
        id: String,
        /// A category path to join; repeatable.
        #[arg(long = "add", value_name = "PATH")]
        add: Vec<String>,
        /// A category path to leave; repeatable.
        #[arg(long = "remove", value_name = "PATH")]
        remove: Vec<String>,
    },
    /// Pin a memory.
    Pin {
        /// Memory id.
        id: String,
        /// Pin it only where these prerequisites hold (JSON, as for `update`).
        #[arg(long, value_name = "JSON")]
        prerequisites: Option<String>,
    },
    /// Unpin a memory.
    Unpin {
        /// Memory id.
        id: String,
    },
    /// Mark a memory outdated.
    Deprecate {
        /// Memory id.
        id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// The memory that replaces it.
        #[arg(long, value_name = "ID")]
        superseded_by: Option<String>,
    },
    /// Forget a memory: hidden at once, its text removed by the next `compact`.
    Forget {
        /// Memory id.
        id: String,
        /// Why (never the memory's text).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Say how relevant a memory was (0..=1).
    Feedback {
        /// Memory id.
        id: String,
        /// 0 (useless) ..= 1 (exactly what was needed).
        relevance: f32,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// The session it concerns (harness:id).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
    },
    /// List live memories, pinned first, then newest.
    List {
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// Only memories in this category or below it.
        #[arg(long)]
        category: Option<String>,
        /// Only this type: a knowledge type (fact, decision, preference,
        /// pattern, issue, context, discovery) lists every kind under it
        /// (issue: gotchas and struggles too); a kind, only that kind.
        #[arg(long = "type", value_parser = parse_type)]
        memory_type: Option<MemoryType>,
        /// At most this many (0: all).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one memory with its sessions and feedback.
    Show {
        /// Memory id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    // Seed 004's memory model (`shared::domain::knowledge`).
    /// The observation buffer: memories staged as conflicts or awaiting curation.
    Staging {
        /// Only this status: needs_clarification, pending, persisted, discarded.
        #[arg(long)]
        status: Option<String>,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resolve a staged conflict: merge, keep_both, replace or skip.
    Resolve {
        /// The staged memory (obs_…).
        id: String,
        /// merge, keep_both, replace or skip.
        #[arg(long)]
        action: String,
        /// Resolve against this memory instead of the one it was flagged against.
        #[arg(long, value_name = "ID")]
        existing: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The knowledge graph around a memory (breadth-first, both directions).
    Graph {
        /// Memory id.
        id: String,
        /// Edges away from it at most (1..=10).
        #[arg(long, default_value_t = 5)]
        depth: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add an edge: FROM derives_from|leads_to|supports|contradicts|refines|supersedes TO.
    Link {
        /// Source memory.
        from: String,
        /// Target memory.
        to: String,
        /// The relation.
        #[arg(long)]
        relation: String,
        /// Confidence, 0..=1.
        #[arg(long, default_value_t = 1.0)]
        strength: f32,
    },
    /// Remove an edge by id (see `memory graph`).
    Unlink {
        /// Edge id (edge_…).
        id: String,
    },
}

/// `tapes` arguments.
#[derive(Debug, Args)]
pub struct TapesArgs {
    /// What to do (default: list).
    #[command(subcommand)]
    pub command: Option<TapesCommand>,
    /// Print the listing as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tapes` subcommands.
#[derive(Debug, Subcommand)]
pub enum TapesCommand {
    /// List segments: name, size, events, time span, sealed or active.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the events of a segment (name, prefix or number) or of a session (harness:id).
    Show {
        /// Segment or session key.
        target: String,
        /// Print each event as stored, one JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Check every checksum; print each problem as file:offset: what. With
    /// DIR, check the other homes' folders of a shared directory instead.
    Verify {
        /// A shared directory (a repository, its `.engram/`, or a tape folder).
        dir: Option<PathBuf>,
    },
    /// Team sharing: seal, then mirror this home's sealed segments into
    /// `DIR/.engram/tapes/<home id>/` (or `DIR/tapes/<home id>/` when DIR has
    /// no `.engram/`), to commit with git.
    Export {
        /// A repository (its `.engram/` is used when it exists) or a shared directory.
        dir: PathBuf,
    },
    /// Team sharing: add the sessions and memories of every other home's
    /// folder in DIR (after a `git pull`), or of a tape folder copied from
    /// another data home. Importing again adds nothing.
    Import {
        /// A repository, its `.engram/`, or a tape folder.
        dir: PathBuf,
    },
    /// Make a damaged log usable again: each unreadable frame becomes a
    /// `tape.lost` event; the damaged bytes are kept in `tapes/quarantine/`.
    Repair,
}

fn parse_harness(s: &str) -> Result<Harness, String> {
    Harness::from_name(&s.to_lowercase()).ok_or_else(|| {
        format!("unknown harness {s:?}; one of: claude, codex, gemini, opencode, specstory, cursor, copilot")
    })
}

/// Reads `--since`: a date or time, or an age (`7d`, `12h`, `30m`) before `now`.
pub fn parse_since(text: &str, now: Ts) -> Result<Ts, Error> {
    let t = text.trim();
    if let Some((num, unit)) = t.char_indices().last().map(|(i, c)| (&t[..i], c))
        && let Ok(n) = num.parse::<i64>()
        && let Some(ms) = match unit {
            'd' => Some(86_400_000),
            'h' => Some(3_600_000),
            'm' => Some(60_000),
            _ => None,
        }
    {
        return Ok(Ts(now.0.saturating_sub(n.saturating_mul(ms))));
    }
    Ts::parse(t).ok_or_else(|| Error::InvalidArgument(format!("--since {t:?}: not a date, a time or an age like 7d")))
}

/// Where output goes and what time it is.
pub struct Env<'w> {
    /// The data home.
    pub paths: Paths,
    /// Now.
    pub now: Ts,
    /// Requested output (stdout).
    pub out: &'w mut dyn Write,
    /// Draw progress bars (stderr is a terminal).
    pub progress: bool,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("paths", &self.paths)
            .field("now", &self.now)
            .field("progress", &self.progress)
            .finish()
    }
}

impl Env<'_> {
    fn write(&mut self, text: &str) -> Result<(), Error> {
        self.out.write_all(text.as_bytes()).map_err(Error::Output)
    }

    fn line(&mut self, text: &str) -> Result<(), Error> {
        self.write(text)?;
        self.write("\n")
    }

    fn json(&mut self, value: &impl serde::Serialize) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::Output(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        self.line(&text)
    }
}

/// Runs a command with the real environment (stdout, `ENGRAM_HOME`, the
/// clock); returns the exit code.
pub fn run(cli: Cli, shutdown: &Shutdown) -> Result<u8, Error> {
    let paths = Paths::from_env().context("find the data home")?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = {
        let mut env = Env { paths, now: Ts::now(), out: &mut out, progress: std::io::stderr().is_terminal() };
        execute(cli.command, &mut env, shutdown)?
    };
    out.flush().map_err(Error::Output)?;
    Ok(code)
}

fn bar(enabled: bool, template: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// Runs one command in `env`; returns the exit code.
pub fn execute(command: Command, env: &mut Env<'_>, shutdown: &Shutdown) -> Result<u8, Error> {
    match command {
        Command::Scan(args) => scan(args, env, shutdown),
        Command::Memory { command } => memory(command, env),
        Command::Record { stdin, session, command } => record(stdin, session, &command, env, shutdown),
        Command::Link { from, to, note, session } => {
            let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
            let r = crate::record::link(&env.paths, (&from, &to), &note, session_arg(session)?, &cwd, env.now)?;
            env.line(&serde_json::to_string(&r).unwrap_or_default())?;
            Ok(0)
        }
        Command::Replay => {
            let pb = bar(env.progress, "replay {bar:40} {pos}/{len} events {per_sec} {eta}");
            let started = Instant::now();
            let report = tapes::replay(&env.paths, &mut |p| {
                pb.set_length(p.total);
                pb.set_position(p.done);
            })?;
            pb.finish_and_clear();
            let secs = started.elapsed().as_secs_f64();
            let s = report.stats;
            env.line(&format!(
                "replayed {} event(s) in {secs:.2} s ({:.0} events/s): {} applied, {} duplicate(s), {} unknown, {} not applicable",
                report.events,
                report.events as f64 / secs.max(1e-9),
                s.applied,
                s.duplicates,
                s.unknown,
                s.errors
            ))?;
            env.line(&format!("database: {}", report.generation.display()))?;
            Ok(0)
        }
        Command::Tapes(args) => match args.command {
            None => tapes_list(env, args.json),
            Some(TapesCommand::List { json }) => tapes_list(env, json || args.json),
            Some(TapesCommand::Show { target, json }) => {
                let paths = env.paths.clone();
                let target = tapes::target(&paths, &target)?;
                let with_session = matches!(target, tapes::Target::Segment(_));
                let n = tapes::show(&paths, &target, &mut |lsn, raw, event| {
                    if shutdown.requested() {
                        return Err(Error::Interrupted);
                    }
                    if json {
                        env.out.write_all(raw).map_err(Error::Output)?;
                        env.write("\n")
                    } else {
                        env.line(&render::event_line(lsn, event, with_session))
                    }
                })?;
                if n == 0
                    && let tapes::Target::Session(key) = &target
                {
                    return Err(Error::InvalidArgument(format!("no events of session {key} in the tapes")));
                }
                Ok(0)
            }
            Some(TapesCommand::Verify { dir: Some(dir) }) => {
                let reports = shared::storage::share::verify(&env.paths, &dir).context("verify the shared tapes")?;
                shared_report(env, &reports, "verified")
            }
            Some(TapesCommand::Export { dir }) => {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let mut journal = shared::projection::open(&env.paths, WRITER).context("open the journal")?;
                let r = shared::storage::share::export(&mut journal, &dir).context("export the tapes")?;
                env.line(&format!(
                    "{}: {} segment(s), {} copied, {} removed; commit it with git",
                    r.folder.display(),
                    r.segments,
                    r.copied,
                    r.removed
                ))?;
                Ok(0)
            }
            Some(TapesCommand::Import { dir }) => {
                let mut journal = shared::projection::open(&env.paths, WRITER).context("open the journal")?;
                let reports = shared::storage::share::import(&mut journal, &dir).context("import the tapes")?;
                shared_report(env, &reports, "imported")
            }
            Some(TapesCommand::Verify { dir: None }) => {
                let report = tapes::verify(&env.paths)?;
                for p in &report.problems {
                    env.line(&format!("{}:{}: {}", p.file.display(), p.offset, p.what))?;
                }
                if !report.problems.is_empty() {
                    return Err(Error::Damaged { problems: report.problems.len() });
                }
                env.line(&format!(
                    "ok: {} segment(s), {} frame(s), every checksum verified",
                    report.segments, report.frames
                ))?;
                for q in &report.quarantined {
                    env.line(&format!("kept in quarantine (bytes recovery or repair cut): {}", q.display()))?;
                }
                Ok(0)
            }
            Some(TapesCommand::Repair) => {
                let report = tapes::repair(&env.paths, env.now)?;
                for r in &report.lost {
                    let what = if r.last_lsn < r.first_lsn {
                        "no whole frame".to_owned()
                    } else {
                        format!("lsn {}..={} replaced by tape.lost events", r.first_lsn, r.last_lsn)
                    };
                    let kept = if r.quarantine.as_os_str().is_empty() {
                        "no bytes left to keep".to_owned()
                    } else {
                        format!("bytes kept in {}", r.quarantine.display())
                    };
                    env.line(&format!("{}: {}: {what}; {kept}", r.file.display(), r.reason))?;
                }
                for f in &report.fixed {
                    env.line(&format!("fixed: {f}"))?;
                }
                for u in &report.unrepaired {
                    env.line(&format!("not repaired: {u}"))?;
                }
                if !report.unrepaired.is_empty() {
                    return Err(Error::Damaged { problems: report.unrepaired.len() });
                }
                if report.is_empty() {
                    let verified = tapes::verify(&env.paths)?;
                    if verified.problems.is_empty() {
                        env.line("nothing to repair")?;
                        return Ok(0);
                    }
                    // Damage repair does not know how to mend: never claim it is fine.
                    for p in &verified.problems {
                        env.line(&format!("not repaired: {}:{}: {}", p.file.display(), p.offset, p.what))?;
                    }
                    return Err(Error::Damaged { problems: verified.problems.len() });
                }
                let verified = tapes::verify(&env.paths)?;
                for p in &verified.problems {
                    env.line(&format!("still damaged: {}:{}: {}", p.file.display(), p.offset, p.what))?;
                }
                if !verified.problems.is_empty() {
                    return Err(Error::Damaged { problems: verified.problems.len() });
                }
                env.line(&format!(
                    "repaired: {} frame(s) lost, {} file(s) fixed; `engram-ingestor tapes verify` passes",
                    report.frames_lost(),
                    report.fixed.len()
                ))?;
                Ok(0)
            }
        },
        Command::Quickstart(args) => {
            let config = Config::load(&env.paths.config()).context("read the configuration")?;
            let cwd = match args.cwd {
                Some(c) => std::path::absolute(&c).unwrap_or(c),
                None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
            };
            let opts = crate::quickstart::QuickstartOptions {
                demo: args.demo,
                demo_home: args.demo_home.map(|d| std::path::absolute(&d).unwrap_or(d)),
                cwd,
                train: !args.no_train,
                bin_dir: bin_dir(args.bin_dir)?,
                roots: None,
            };
            let paths = env.paths.clone();
            crate::quickstart::run(&paths, &config, &opts, env.now, &mut *env.out, shutdown)?;
            Ok(0)
        }
        Command::RemoveDemo { dry_run } => {
            let r = crate::demo_data::remove(&env.paths, env.now, dry_run)?;
            let verb = if dry_run { "would forget" } else { "forgot" };
            env.line(&format!(
                "{} demo session(s) in {}; {verb} {} memor{} learned only from them{}",
                r.sessions,
                env.paths.home().display(),
                r.memories.len(),
                if r.memories.len() == 1 { "y" } else { "ies" },
                match &r.corpus {
                    Some(c) if dry_run => format!("; would delete {}", c.display()),
                    Some(c) => format!("; deleted {}", c.display()),
                    None => String::new(),
                }
            ))?;
            if !dry_run && !r.memories.is_empty() {
                env.line("Run `engram-ingestor compact` to erase their text from the tapes.")?;
            }
            Ok(0)
        }
        Command::Dedup { dry_run, max_passes, json } => {
            let config = Config::load(&env.paths.config()).context("read the configuration")?;
            let mut journal = shared::projection::open(&env.paths, WRITER).context("open the journal")?;
            let opts = crate::dedup_run::DedupOptions { dry_run, max_passes };
            let report = crate::dedup_run::run(&mut journal, &config, &opts, env.now)?;
            if json {
                env.json(&report)?;
            } else {
                env.write(&crate::dedup_run::render(&report))?;
            }
            Ok(0)
        }
        Command::Extractor { command: ExtractorCommand::Sentences { session } } => {
            for line in crate::sentences::list(&env.paths, session.as_deref())? {
                env.line(&serde_json::to_string(&line).map_err(|e| Error::InvalidArgument(e.to_string()))?)?;
            }
            Ok(0)
        }
        Command::Extractor { command: ExtractorCommand::Test { session, json } } => {
            let config = Config::load(&env.paths.config()).context("read the configuration")?;
            let probe = crate::probe::run(&env.paths, &config, session.as_deref(), env.now)?;
            if json {
                env.json(&probe)?;
            } else {
                env.write(&crate::probe::render(&probe))?;
            }
            match probe.error {
                Some(e) => Err(Error::ExtractorResponse { reason: e }),
                None => Ok(0),
            }
        }
        Command::Session { command: SessionCommand::Audit { session, limit, json } } => {
            let store = shared::storage::store::Store::open(&env.paths.db()).context("open the database")?;
            match session {
                Some(key) => match crate::audit::one(&store, &key)? {
                    Some(a) if json => env.json(&a)?,
                    Some(a) => env.write(&crate::audit::render(&a))?,
                    None => return Err(Error::InvalidArgument(format!("no session {key:?}"))),
                },
                None => {
                    let all = crate::audit::recent(&store, limit)?;
                    if json {
                        env.json(&all)?;
                    } else {
                        for a in &all {
                            env.write(&crate::audit::render(a))?;
                        }
                    }
                }
            }
            Ok(0)
        }
        Command::Install(args) => install(args, env, true),
        Command::Uninstall(args) => install(args, env, false),
        Command::Hook { event: HookTarget::Ingest, lane, .. } => {
            crate::hook::worker(&env.paths, lane.as_deref(), shutdown)?;
            Ok(0)
        }
        Command::Hook { event: HookTarget::Event(e), harness, .. } => {
            crate::hook::main_entry(e, harness.as_deref());
            Ok(0)
        }
        Command::Compact => {
            let report = tapes::compact(&env.paths)?;
            env.line(&format!(
                "sealed the active segment; {} forgotten memor{} removed from {} event(s) in {} rewritten segment(s); database rebuilt",
                report.forgotten,
                if report.forgotten == 1 { "y's text" } else { "ies' text" },
                report.events_scrubbed,
                report.segments_rewritten
            ))?;
            Ok(0)
        }
    }
}

fn install(args: InstallArgs, env: &mut Env<'_>, add: bool) -> Result<u8, Error> {
    let opts = crate::install::InstallOptions {
        target: args.harness,
        project: args.project.map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
        dry_run: args.dry_run,
        bin_dir: bin_dir(args.bin_dir)?,
        engram_home: std::env::var_os("ENGRAM_HOME").filter(|v| !v.is_empty()).map(PathBuf::from),
        dirs: crate::install::HarnessDirs::from_env()?,
        plugin: !args.no_plugin,
    };
    let mut report =
        if add { crate::install::install(&env.paths, &opts)? } else { crate::install::uninstall(&env.paths, &opts)? };
    let owner = crate::install::install_name(opts.target, opts.project.as_deref());
    report.schedule = match (add, args.schedule.as_deref()) {
        (true, Some(kind)) => {
            let trainer = opts.bin_dir.join(shared::domain::training::auto::TRAINER_BIN);
            let kind = crate::schedule::Kind::parse(kind)?;
            Some(crate::schedule::install(&env.paths, kind, &owner, &trainer, opts.dry_run)?)
        }
        (true, None) => None,
        (false, _) => crate::schedule::uninstall(&env.paths, &owner, opts.dry_run)?,
    };
    if args.json {
        env.json(&report)?;
    } else {
        env.write(&report.to_string())?;
        if add && !args.dry_run && report.files.iter().any(|f| f.status != crate::install::FileStatus::Unchanged) {
            let next = match opts.target {
                crate::install::Target::Claude => {
                    "Start a new Claude Code session: the SessionStart hook injects memories (run /hooks and /mcp to check)."
                }
                crate::install::Target::Codex => {
                    "Start a new Codex session (hooks may need to be trusted once); `codex mcp list` shows the server."
                }
            };
            env.line(next)?;
        }
        if add {
            env.line(&extractor_hint(&env.paths, opts.target))?;
        }
    }
    Ok(0)
}

/// The one line `install` prints about the extractor model: how to switch
/// it on with the harness just installed, or which one is on.
fn extractor_hint(paths: &Paths, target: crate::install::Target) -> String {
    let config = Config::load(&paths.config()).unwrap_or_default();
    if config.extractor.enabled() {
        return format!(
            "Extractor model: {} (`engram-ingestor extractor test` shows what it returns).",
            config.extractor.describe()
        );
    }
    let preset = match target {
        crate::install::Target::Claude => "claude",
        crate::install::Target::Codex => "codex",
    };
    format!(
        "Optional: to have your {preset} CLI extract lessons too, add `[extractor] preset = \"{preset}\"` to {} \
         (off by default; `engram-ingestor extractor test` shows what it returns).",
        paths.config().display()
    )
}

fn tapes_list(env: &mut Env<'_>, json: bool) -> Result<u8, Error> {
    let segs = tapes::segments(&env.paths)?;
    if json {
        let rows: Vec<serde_json::Value> = segs
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name, "seq": s.seq, "sealed": s.sealed, "generation": s.generation,
                    "bytes": s.bytes, "raw_bytes": s.raw_bytes, "events": s.events,
                    "first_lsn": s.first_lsn, "last_lsn": s.last_lsn,
                    "first_ts": s.min_ts.map(|t| Ts(t).to_rfc3339()), "last_ts": s.max_ts.map(|t| Ts(t).to_rfc3339()),
                })
            })
            .collect();
        env.json(&rows)?;
    } else {
        env.write(&render::segments(&segs))?;
    }
    Ok(0)
}

fn scan(args: ScanArgs, env: &mut Env<'_>, shutdown: &Shutdown) -> Result<u8, Error> {
    let config = Config::load(&env.paths.config()).context("read the configuration")?;
    let mut opts = ScanOptions::new(env.now);
    opts.harnesses = args.harnesses;
    opts.paths = args.paths;
    opts.since = args.since.as_deref().map(|s| parse_since(s, env.now)).transpose()?;
    let pb = bar(env.progress, "scan {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} {msg}");
    let summary = scan::run(&env.paths, &config, &opts, shutdown, &mut |p| {
        pb.set_length(p.bytes_total.max(p.bytes_done));
        pb.set_position(p.bytes_done);
        pb.set_message(format!("{}/{} files", p.files_done, p.files_total));
    })?;
    pb.finish_and_clear();
    if args.json {
        env.json(&summary)?;
    } else {
        env.write(&render::scan_summary(&summary))?;
    }
    Ok(if summary.interrupted { 130 } else { 0 })
}

fn parse_prerequisites(json: &str) -> Result<shared::storage::event::Prerequisites, Error> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::InvalidArgument(format!("--prerequisites is not JSON: {e}")))?;
    Ok(env_ops::parse_prerequisites(&v)?)
}

fn session_arg(session: Option<String>) -> Result<Option<shared::base::ids::SessionKey>, Error> {
    session
        .map(|s| {
            shared::domain::memory::ops::parse_session(&s)
                .map_err(|e| Error::InvalidArgument(format!("--session: {e}")))
        })
        .transpose()
}

fn record(
    stdin: bool,
    session: Option<String>,
    command: &[String],
    env: &mut Env<'_>,
    shutdown: &Shutdown,
) -> Result<u8, Error> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let session = session_arg(session)?;
    let r = match (stdin, command.is_empty()) {
        (true, true) => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| Error::io("stdin", e))?;
            crate::record::record_transcript(&env.paths, &text, session, &cwd, env.now)?
        }
        (false, false) => crate::record::record_command(&env.paths, command, &cwd, env.now, &mut *env.out, shutdown)?,
        _ => return Err(Error::InvalidArgument("record: give either --stdin or a command after --".into())),
    };
    env.line(&serde_json::to_string(&r).unwrap_or_default())?;
    Ok(r.exit.map_or(0, |c| u8::try_from(c).unwrap_or(1)))
}

/// The project of the working directory, for a memory added without
/// `--project`: the first marker up from it, a subfolder or worktree mapping
/// to its repository (`shared::domain::env::project`), when the data home
/// knows that project (it recorded a session there); `None` otherwise, and
/// in the home folder. Returns the key and what to tell the person.
fn project_here(
    journal: &shared::storage::journal::Journal,
    config: &Config,
) -> Result<(Option<String>, String), Error> {
    let global = |why: &str| Ok((None, format!("no project: a global memory ({why}; --project names one)")));
    let Ok(cwd) = std::env::current_dir() else { return global("the current directory cannot be read") };
    let detected = shared::domain::env::detect(&cwd, &shared::domain::env::DetectOptions::from_env(&config.env, false));
    // The home folder is nobody's project (its `.claude/` is Claude Code's
    // configuration): a memory added there is a general one.
    let at_home = shared::domain::env::home_dir()
        .is_some_and(|h| shared::domain::env::project::normalize(&h) == std::path::Path::new(&detected.root));
    if detected.marker.is_none() || detected.project.is_empty() || at_home {
        return global("the current directory is in no project");
    }
    let known = shared::domain::env::store::project(journal.store().conn(), &detected.project)
        .map_err(|e| Error::engram("read the projects", shared::base::error::Error::sqlite("projects", e)))?;
    match known {
        Some(p) => Ok((Some(p.key.clone()), format!("project: {} ({}), the current directory's", p.name, p.key))),
        None => global(&format!(
            "the current directory is in {}, a project Engram has recorded no session in",
            detected.root
        )),
    }
}

/// The known project `--project` names: its key, or the name of exactly one
/// known project (or the bare name older memories are filed under). A name
/// several projects have, or none, is an error that lists the candidates.
fn named_project(journal: &shared::storage::journal::Journal, given: &str) -> Result<(String, String), Error> {
    use shared::domain::env::store::{KnownProject, ProjectLookup, lookup_project};
    let list = |projects: &[KnownProject]| -> String {
        projects.iter().map(|p| format!("\n  {}  ({}, at {})", p.key, p.name, p.root)).collect()
    };
    let found = lookup_project(journal.store().conn(), given)
        .map_err(|e| Error::engram("read the projects", shared::base::error::Error::sqlite("projects", e)))?;
    match found {
        ProjectLookup::Found(p) => {
            let note = format!("project: {} ({})", p.name, p.key);
            Ok((p.key, note))
        }
        ProjectLookup::Legacy(v) => Ok((v.clone(), format!("project: {v} (as older memories name it)"))),
        ProjectLookup::Ambiguous(ps) => Err(Error::InvalidArgument(format!(
            "--project {given:?} is ambiguous: {} known projects have that name; give the key of one:{}",
            ps.len(),
            list(&ps)
        ))),
        ProjectLookup::Unknown(ps) if ps.is_empty() => Err(Error::InvalidArgument(format!(
            "--project {given:?}: no project is known yet (Engram knows a project once it has recorded a session \
             in it); leave --project out for a global memory"
        ))),
        ProjectLookup::Unknown(ps) => Err(Error::InvalidArgument(format!(
            "--project {given:?} is not a known project (give a key or a name exactly); known projects:{}",
            list(&ps)
        ))),
    }
}

/// Tells the person which project a memory went to (stderr: stdout holds
/// only the command's output, the new memory's id).
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

fn memory(command: MemoryCommand, env: &mut Env<'_>) -> Result<u8, Error> {
    let now = env.now;
    let mut journal = shared::projection::open(&env.paths, WRITER).context("open the journal")?;
    let j = &mut journal;
    match command {
        MemoryCommand::Add { text, memory_type, importance, project, tags, pin, sources, no_check } => {
            let config = Config::load(&env.paths.config()).context("read the configuration")?;
            let (project, chosen) = match project {
                Some(p) => {
                    let (key, chosen) = named_project(j, &p)?;
                    (Some(key), chosen)
                }
                None => project_here(j, &config)?,
            };
            let new = NewMemory { text, memory_type, importance, project, tags, pinned: pin };
            if no_check {
                let id = memories::add(j, new, now)?;
                env.line(id.as_str())?;
                note(&chosen);
                return Ok(0);
            }
            match memories::save(j, &config, new, &sources, now)? {
                Saved::Added { id, .. } => {
                    env.line(id.as_str())?;
                    note(&chosen);
                }
                Saved::Duplicate { of } => env.line(&format!(
                    "not saved: a duplicate of {} ({:.0}% alike): {}",
                    of.id,
                    of.similarity * 100.0,
                    render::short(&of.content, 90)
                ))?,
                Saved::Staged { stage_id, with, .. } => env.line(&format!(
                    "staged as {stage_id}: {:.0}% alike to {} ({})\nresolve it with `engram-ingestor memory resolve {stage_id} --action merge|keep_both|replace|skip`",
                    with.similarity * 100.0,
                    with.id,
                    render::short(&with.content, 90)
                ))?,
            }
        }
        MemoryCommand::Update { id, text, memory_type, importance, tags, project, category, prerequisites } => {
            let tags = (!tags.is_empty()).then_some(tags);
            let project = match project {
                Some(p) => {
                    let (key, chosen) = named_project(j, &p)?;
                    note(&chosen);
                    Some(key)
                }
                None => None,
            };
            let change = MemoryChange { text, memory_type, importance, tags, project };
            let env_only = change == MemoryChange::default() && (category.is_some() || prerequisites.is_some());
            // Every argument is checked before anything is written.
            let prerequisites = prerequisites.as_deref().map(parse_prerequisites).transpose()?;
            if let Some(c) = &category {
                shared::domain::env::categories::normalize(c).map_err(Error::InvalidArgument)?;
            }
            if !env_only {
                memories::update(j, &id, change, now)?;
            }
            if let Some(c) = category {
                env_ops::categorize(j, &id, &[c], &[], true, now)?;
            }
            if let Some(p) = prerequisites {
                env_ops::set_prerequisites(j, &id, p, now)?;
            }
            env.line(&format!("updated {id}"))?;
        }
        MemoryCommand::Categorize { id, add, remove } => {
            let now_in = env_ops::categorize(j, &id, &add, &remove, false, now)?;
            env.line(&format!(
                "{id} is in: {}",
                if now_in.is_empty() { "no category".into() } else { now_in.join(", ") }
            ))?;
        }
        MemoryCommand::Pin { id, prerequisites } => {
            let prerequisites = prerequisites.as_deref().map(parse_prerequisites).transpose()?;
            memories::set_pinned(j, &id, true, now)?;
            if let Some(p) = prerequisites {
                env_ops::set_prerequisites(j, &id, p, now)?;
            }
            env.line(&format!("pinned {id}"))?;
        }
        MemoryCommand::Unpin { id } => {
            memories::set_pinned(j, &id, false, now)?;
            env.line(&format!("unpinned {id}"))?;
        }
        MemoryCommand::Deprecate { id, reason, superseded_by } => {
            memories::deprecate(j, &id, reason, superseded_by, now)?;
            env.line(&format!("deprecated {id}"))?;
        }
        MemoryCommand::Forget { id, reason } => {
            if memories::forget(j, &id, reason, now)? {
                env.line(&format!("forgot {id}; run `engram-ingestor compact` to remove its text from the tapes"))?;
            } else {
                env.line(&format!("{id} was already forgotten"))?;
            }
        }
        MemoryCommand::Feedback { id, relevance, reason, session } => {
            memories::feedback(j, &id, relevance, reason, session, now)?;
            env.line(&format!("recorded feedback {relevance} on {id}"))?;
        }
        MemoryCommand::List { project, category, memory_type, limit, json } => {
            let in_category = match &category {
                Some(c) => Some(shared::domain::env::categories::members(j.store().conn(), c).map_err(|e| {
                    Error::engram("read the categories", shared::base::error::Error::sqlite("categories", e))
                })?),
                None => None,
            };
            let all = if in_category.is_some() { 0 } else { limit };
            let filter = MemoryFilter { project, memory_type, limit: all, include_forgotten: false };
            let mut list = memories::list(j.store(), &filter)?;
            if let Some(ids) = &in_category {
                list.retain(|m| ids.contains(m.id.as_str()));
                if limit > 0 {
                    list.truncate(limit);
                }
            }
            if json {
                env.json(&list)?;
            } else if list.is_empty() {
                let all = j.store().live_memory_count().map_err(|e| Error::engram("count memories", e))?;
                if all == 0 {
                    env.write(&shared::base::hint::empty_store(env.paths.home()))?;
                } else {
                    let noun = if all == 1 { "memory" } else { "memories" };
                    env.line(&format!("no memory matches these filters ({all} {noun} in all)"))?;
                }
            } else {
                let width = render::project_width(&list);
                for m in &list {
                    env.line(&render::memory_line(m, width))?;
                }
            }
        }
        MemoryCommand::Show { id, json } => {
            let d = memories::show(j.store(), &id)?;
            if json {
                env.json(&d)?;
            } else {
                env.write(&render::memory_details(&d))?;
            }
        }
        MemoryCommand::Staging { status, project, limit, json } => {
            let filter = shared::domain::knowledge::buffer::StagedFilter { status, project, limit };
            let list = memories::staging(j.store(), &filter)?;
            if json {
                env.json(&list)?;
            } else if list.is_empty() {
                env.line("nothing staged")?;
            } else {
                for s in &list {
                    env.line(&render::staged_line(s))?;
                }
            }
        }
        MemoryCommand::Resolve { id, action, existing, json } => {
            let config = Config::load(&env.paths.config()).context("read the configuration")?;
            let r = memories::resolve(j, &config, &id, &action, existing.as_deref(), now)?;
            if json {
                env.json(&r)?;
            } else {
                let into = r.memory_id.as_ref().map(|m| format!(" into {m}")).unwrap_or_default();
                let sup = r.superseded.as_ref().map(|m| format!("; {m} is superseded")).unwrap_or_default();
                env.line(&format!("{}: {}{into}{sup}", r.conflict_id, r.action))?;
            }
        }
        MemoryCommand::Graph { id, depth, json } => {
            let g = memories::graph(j.store(), &id, depth)?;
            if json {
                env.json(&g)?;
            } else {
                env.write(&render::graph(&g))?;
            }
        }
        MemoryCommand::Link { from, to, relation, strength } => {
            let edge = memories::link(j, &from, &to, &relation, strength, now)?;
            env.line(&format!("linked {from} {relation} {to} ({edge})"))?;
        }
        MemoryCommand::Unlink { id } => {
            memories::unlink(j, &id, now)?;
            env.line(&format!("removed {id}"))?;
        }
    }
    Ok(0)
}

/// Prints what `tapes import` or `tapes verify DIR` found per folder; exits
/// non-zero when a folder is damaged (it was not imported).
fn shared_report(env: &mut Env<'_>, reports: &[shared::storage::share::FolderReport], verb: &str) -> Result<u8, Error> {
    let mut problems = 0;
    for r in reports {
        for p in &r.problems {
            env.line(&format!("{}:{}: {}", p.file.display(), p.offset, p.what))?;
        }
        problems += r.problems.len();
        if !r.problems.is_empty() {
            env.line(&format!("{}: not {verb}: {} problem(s) above", r.folder.display(), r.problems.len()))?;
        } else if verb == "imported" {
            env.line(&format!(
                "{}: {} segment(s), {} event(s): {} added, {} already here{}",
                r.folder.display(),
                r.segments,
                r.events,
                r.added,
                r.known,
                if r.forgotten > 0 { format!(", {} forgotten here and left out", r.forgotten) } else { String::new() }
            ))?;
        } else {
            env.line(&format!("{}: ok: {} segment(s), {} frame(s)", r.folder.display(), r.segments, r.events))?;
        }
    }
    if reports.is_empty() {
        env.line("no other home's tapes found")?;
    }
    if problems > 0 {
        return Err(Error::Damaged { problems });
    }
    Ok(0)
}

/// A `--type` value: one of the memory types, any case.
fn parse_type(name: &str) -> Result<MemoryType, String> {
    shared::domain::memory::ops::check_type(name).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn since_accepts_dates_times_and_ages() {
        let now = Ts(10 * 86_400_000);
        assert_eq!(parse_since("2d", now).expect("age"), Ts(8 * 86_400_000));
        assert_eq!(parse_since("90m", now).expect("age"), Ts(now.0 - 90 * 60_000));
        assert_eq!(parse_since("1970-01-02", now).expect("date"), Ts(86_400_000));
        assert_eq!(parse_since("1970-01-01T00:00:01Z", now).expect("time"), Ts(1_000));
        assert!(parse_since("yesterday", now).is_err());
    }

    #[test]
    fn harness_names() {
        assert_eq!(parse_harness("Claude"), Ok(Harness::Claude));
        assert_eq!(parse_harness("SpecStory"), Ok(Harness::SpecStory));
        assert_eq!(parse_harness("cursor"), Ok(Harness::Cursor));
        assert!(parse_harness("windsurf").is_err());
    }
}
