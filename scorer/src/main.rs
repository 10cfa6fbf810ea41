//! `engram-scorer`: command-line entry point (the logic lives in the library).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use scorer::ServeOptions;
use scorer::search::SearchParams;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::domain::hook::HookEvent;

/// Engram's scorer: the predictor sidecar, the agents' read-side hooks, the
/// MCP server and memory search.
#[derive(Debug, Parser)]
#[command(name = "engram-scorer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Embedding size accepted by `score` and `train` (Signet's flag; also accepted without `serve`).
    #[arg(long, global = true)]
    native_dim: Option<usize>,
    /// Checkpoint to serve at start when it exists (Signet's flag).
    #[arg(long, global = true)]
    checkpoint: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve JSON-RPC 2.0 on stdin/stdout, one object per line (the default).
    Serve,
    /// A read-side hook of Claude Code or Codex: hook JSON on stdin, context on stdout.
    Hook {
        /// session-start, user-prompt-submit or pre-tool-use (`record` is the
        /// recorder the hooks start themselves).
        #[arg(value_parser = parse_hook)]
        event: HookCommand,
        /// The harness calling (claude or codex); guessed from the input when absent.
        #[arg(long)]
        harness: Option<String>,
    },
    /// Serve the MCP tools (memory_search, memory_save, …) over stdio.
    Mcp,
    /// Search memories.
    Search {
        /// What to look for.
        query: String,
        /// Most results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// Only this memory type (a knowledge type lists every kind under it).
        #[arg(long = "type", value_parser = parse_type)]
        memory_type: Option<shared::storage::event::MemoryType>,
        /// Only memories with this tag; repeatable.
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Only memories in this category or below it.
        #[arg(long)]
        category: Option<String>,
        /// Record the search within this session (harness:id).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve the local web UI and REST API (127.0.0.1:37820 by default; prints its address).
    Web {
        /// Port (default: web.port in config.toml, 37820; 0 picks a free one).
        #[arg(long)]
        port: Option<u16>,
        /// Address to listen on (default: web.bind, 127.0.0.1).
        #[arg(long)]
        bind: Option<std::net::IpAddr>,
        /// Allow a non-loopback address (anyone who reaches it can read your memory).
        #[arg(long)]
        allow_remote: bool,
    },
    /// Why a span of code exists: the sessions that produced it, with transcript (JSON; --pretty for text).
    Explain {
        /// FILE:START-END, FILE:LINE or FILE; `-` explains text read from stdin.
        target: String,
        /// Print text for people instead of JSON.
        #[arg(long)]
        pretty: bool,
        /// Events of transcript before each touch.
        #[arg(long, default_value_t = 3)]
        before: usize,
        /// Events of transcript after each touch.
        #[arg(long, default_value_t = 3)]
        after: usize,
        /// Touches only (session, offset, confidence), no transcript.
        #[arg(long)]
        brief: bool,
        /// Lineage edges below this are not followed (agent links always are).
        #[arg(long, default_value_t = shared::domain::provenance::explain::MIN_CONFIDENCE)]
        min_confidence: f32,
        /// Include weak touches, low-confidence and location-only edges.
        #[arg(long)]
        all: bool,
        /// Grow the span until at most N sessions are found.
        #[arg(long, value_name = "N")]
        expand_until: Option<usize>,
        /// Most sessions shown.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// The raw transcript of a session around an offset (from `explain`).
    View {
        /// harness:id (or the harness id alone).
        session: String,
        /// Offset of the event in the session.
        #[arg(long, default_value_t = 0)]
        at: u64,
        /// Events before it.
        #[arg(long, default_value_t = 10)]
        before: u64,
        /// Events after it.
        #[arg(long, default_value_t = 10)]
        after: u64,
        /// Print text for people instead of JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Show what would be injected for a directory (default: the current one) and why.
    Context {
        /// The directory a session would start in.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Preview a prompt's injection instead of the session start.
        #[arg(long)]
        prompt: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `engram-scorer hook` runs.
#[derive(Clone, Copy, Debug)]
enum HookCommand {
    /// A read-side hook.
    Event(HookEvent),
    /// The detached recorder of what the hooks spooled.
    Record,
}

fn parse_hook(s: &str) -> Result<HookCommand, String> {
    if s == scorer::hook::RECORD {
        return Ok(HookCommand::Record);
    }
    match HookEvent::from_arg(s) {
        Some(e) if e.is_read_side() => Ok(HookCommand::Event(e)),
        Some(e) => Err(format!("{} is a write-side hook: use `engram-ingestor hook {}`", e.arg(), e.arg())),
        None => Err(format!("unknown hook {s:?}; one of: session-start, user-prompt-submit, pre-tool-use")),
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("engram-scorer: {e}");
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Hook { event, harness } = &command {
        // Hooks log to the data home and always exit 0.
        match event {
            HookCommand::Event(e) => scorer::hook::main_entry(*e, harness.as_deref()),
            HookCommand::Record => scorer::hook::recorder_entry(),
        }
        return ExitCode::SUCCESS;
    }
    shared::base::logging::init_stderr("warn");
    let shutdown = match Shutdown::install() {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot install signal handlers: {e}")),
    };
    let paths = || Paths::from_env().map_err(scorer::Error::from);
    let stdout = std::io::stdout();
    let result = match command {
        Command::Hook { .. } => Ok(()),
        Command::Serve => {
            let mut opts = ServeOptions::from_env();
            if let Some(n) = cli.native_dim {
                opts.native_dim = n;
            }
            opts.checkpoint = cli.checkpoint;
            scorer::run(opts, shutdown)
        }
        Command::Mcp => scorer::mcp::run(&shutdown),
        Command::Search { query, limit, project, memory_type, tags, category, session, json } => {
            paths().and_then(|p| {
                let session = session
                    .as_deref()
                    .map(shared::domain::memory::ops::parse_session)
                    .transpose()
                    .map_err(|e| scorer::Error::params("--session", e.to_string()))?;
                let params =
                    SearchParams { query, memory_type, project, tags, from: None, to: None, limit, session, category };
                scorer::cli::search(&p, params, json, &mut stdout.lock())
            })
        }
        Command::Web { port, bind, allow_remote } => paths().and_then(|p| {
            shared::base::logging::init_stderr("info");
            scorer::web::run(p, scorer::web::WebOptions { bind, port, allow_remote }, shutdown)
        }),
        Command::Explain { target, pretty, before, after, brief, min_confidence, all, expand_until, limit } => paths()
            .and_then(|p| {
                let opts = shared::domain::provenance::explain::ExplainOptions {
                    before,
                    after,
                    brief,
                    min_confidence,
                    all,
                    limit,
                    ..Default::default()
                };
                let req = scorer::provenance::ExplainRequest { target, expand_until, pretty };
                scorer::provenance::explain_cmd(&p, &req, &opts, &mut std::io::stdin().lock(), &mut stdout.lock())
            }),
        Command::View { session, at, before, after, pretty } => paths()
            .and_then(|p| scorer::provenance::view_cmd(&p, &session, (at, before, after), pretty, &mut stdout.lock())),
        Command::Context { cwd, prompt, json } => {
            paths().and_then(|p| scorer::cli::context(&p, cwd, prompt, json, &mut stdout.lock()))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(scorer::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// A `--type` value: one of the memory types, any case.
fn parse_type(name: &str) -> Result<shared::storage::event::MemoryType, String> {
    shared::domain::memory::ops::check_type(name).map_err(|e| e.to_string())
}
