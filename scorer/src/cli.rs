//! `engram-scorer search` and `engram-scorer context`: memory on the command
//! line, with the same pipeline the hooks and the MCP server use.
//!
//! * `search "QUERY" [--json] [--limit N] [--project P] [--type T] [--session KEY]`
//!   ranks with trigger `search` and records it (see [`crate::search`]).
//! * `context [--json] [--cwd DIR] [--prompt TEXT]` shows what a session
//!   started in the directory (or that prompt) would get, and why: the query,
//!   every injected memory with the pipeline's reasons, the next best with
//!   why they were left out, and the exact text. Nothing is recorded.

use std::io::Write;
use std::path::{Path, PathBuf};

use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::injection;
use shared::domain::moment::preview::{self, Preview};
use shared::storage::store::Store;

use crate::error::{Error, Result};
use crate::search::{self, SearchParams};

/// Memories listed after the injected ones in `context`.
const NEXT_BEST: usize = 5;
/// How long the command line waits for the tape lock before spooling.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn config(paths: &Paths) -> Result<Config> {
    Ok(Config::load(&paths.config())?)
}

fn model(paths: &Paths) -> Option<injection::LoadedModel> {
    injection::load_model(paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot load the serving model; ranking with the baseline only");
        None
    })
}

fn write_out(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes()).map_err(|e| Error::io("write", Path::new("stdout"), e))
}

/// `engram-scorer search`.
pub fn search(paths: &Paths, p: SearchParams, json: bool, out: &mut dyn Write) -> Result<()> {
    let config = config(paths)?;
    let store = Store::open(&paths.db())?;
    let model = model(paths);
    let (result, events) =
        search::search(&store, &config, model.as_ref().map(injection::LoadedModel::serving), &p, Ts::now())?;
    let empty = result.results.is_empty() && store.live_memory_count()? == 0;
    drop(store);
    if let Err(e) = shared::domain::hook::record(
        paths,
        &crate::native::writer_name(),
        &events,
        LOCK_WAIT,
        shared::projection::apply,
    ) {
        tracing::warn!(error = %e, "could not record the search");
    }
    if json {
        let text = serde_json::to_string_pretty(&result).unwrap_or_default();
        write_out(out, &format!("{text}\n"))
    } else if empty {
        write_out(out, &shared::base::hint::empty_store(paths.home()))
    } else {
        write_out(out, &search::render(&result))
    }
}

/// `engram-scorer context`.
pub fn context(
    paths: &Paths,
    cwd: Option<PathBuf>,
    prompt: Option<String>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let config = config(paths)?;
    let store = Store::open(&paths.db())?;
    let model = model(paths);
    let serving = model.as_ref().map(injection::LoadedModel::serving);
    let cwd = match cwd {
        Some(c) => std::path::absolute(&c).unwrap_or(c),
        None => std::env::current_dir().map_err(|e| Error::io("read the current directory", Path::new("."), e))?,
    };
    let now = Ts::now();
    let env = preview::environment(&config, &cwd);
    let preview: Preview = match prompt {
        None => preview::preview_session_start(&store, &config, serving, &cwd, now, NEXT_BEST)?,
        Some(prompt) => preview::preview_prompt(&store, &config, serving, &cwd, &prompt, now, NEXT_BEST)?,
    };
    if json {
        let mut value = serde_json::to_value(&preview).unwrap_or_default();
        value["environment"] = serde_json::to_value(&env).unwrap_or_default();
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        write_out(out, &format!("{text}\n"))
    } else {
        let empty = if store.live_memory_count()? == 0 {
            format!("\n{}", shared::base::hint::empty_store(paths.home()))
        } else {
            String::new()
        };
        write_out(out, &format!("directory: {}\n{}{}{empty}", cwd.display(), environment_lines(&env), preview.render()))
    }
}

/// The detected environment, for people: project, stack, tags.
fn environment_lines(env: &shared::storage::event::EnvDetected) -> String {
    let list = |v: &[String]| if v.is_empty() { "(none)".to_owned() } else { v.join(", ") };
    let mut s =
        format!("project: {} ({})\nstack: {}\ntags: {}\n", env.name, env.project, list(&env.stack), list(&env.tags));
    if !env.mcp_servers.is_empty() {
        s.push_str(&format!("mcp servers: {}\n", env.mcp_servers.join(", ")));
    }
    s
}
