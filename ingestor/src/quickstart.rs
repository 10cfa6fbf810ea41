//! `engram-ingestor quickstart`: the first run, the whole pipeline in one
//! command, on the user's own agent history when there is one and on the
//! built-in demo corpus ([`crate::demo`]) otherwise.
//!
//! 1. Look for harness logs at the standard locations.
//! 2. Ingest: with history, one scan of everything; with the demo, the
//!    sessions in time order, each preceded by the rankings its hooks would
//!    have served (session start and every prompt, recorded as
//!    `ranking.served` and `fts.hits` in that session), so that the trainer
//!    has served sessions to learn from exactly as it would after `install`.
//! 3. Show the memories learned, then what a session started in the current
//!    directory would get and why (the pipeline's reasons; with the demo,
//!    also a demo project's session start and one of its prompts).
//! 4. Train: `engram-trainer run` when it sits next to this binary and some
//!    ended session has served rankings; then `engram-trainer report --html`.
//!    Without served sessions, `engram-trainer history` first replays the
//!    recorded sessions through the read side and labels them, and
//!    `engram-trainer run` trains a first model when they give enough
//!    confident lists (or says in numbers why not).
//!    A missing trainer is reported, never an error. With the demo corpus,
//!    whose routine sessions carry a time-of-day pattern, the trained model
//!    passes its gates, and one query's ranking is shown before training (the
//!    baseline's order) and after (the new model's).
//! 5. A short summary (with the lessons the user gave more than once, and
//!    how many a memory already held) and what to do next.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::injection::{self, ServeRequest, SessionContext};
use shared::domain::memory::queries::MemoryFilter;
use shared::domain::moment::preview;
use shared::domain::moment::{Kind, Moment};
use shared::storage::event::{Body, Event, FtsHits, trigger};
use shared::storage::journal::Journal;

use crate::adapter::WRITER;
use crate::demo::{self, DemoHarness, DemoSession};
use crate::demo_data;
use crate::discover::{self, Roots};
use crate::error::{EngramContext, Error};
use crate::render;
use crate::scan::{self, ScanOptions, ScanSummary};

/// Days before now the demo corpus starts.
const DEMO_DAYS_AGO: i64 = 12;
/// Memories listed in the summary.
const SHOWN_MEMORIES: usize = 6;

/// How the first run goes.
#[derive(Clone, Debug)]
pub struct QuickstartOptions {
    /// Use the demo corpus even if there is history.
    pub demo: bool,
    /// The data home the demo runs in (`None`: [`demo_data::demo_home`]).
    pub demo_home: Option<PathBuf>,
    /// The directory whose session start is previewed.
    pub cwd: PathBuf,
    /// Run the trainer if present.
    pub train: bool,
    /// Where `engram-trainer` may be.
    pub bin_dir: PathBuf,
    /// Where the harness logs are (`None`: the standard locations).
    pub roots: Option<Roots>,
}

/// What the first run did, for tests and `--json`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct QuickstartSummary {
    /// The demo corpus was used.
    pub demo: bool,
    /// Harness logs found.
    pub sources: usize,
    /// Sessions known after ingesting.
    pub sessions: i64,
    /// Live memories after ingesting.
    pub memories: i64,
    /// Rankings recorded by the demo replay.
    pub rankings: usize,
    /// Memories a session in the current directory would get.
    pub injected_here: usize,
    /// The trainer ran (and its first line of output).
    pub trainer: Option<String>,
    /// The history replay ran (and its line of output).
    pub history: Option<String>,
    /// Lessons given more than once, per project.
    pub told_twice: Vec<shared::domain::training::history::ToldTwice>,
    /// The HTML report written.
    pub report: Option<PathBuf>,
    /// The data home used (the demo's own one with the demo corpus).
    pub data_home: PathBuf,
}

struct Out<'a> {
    w: &'a mut dyn Write,
}

impl Out<'_> {
    fn line(&mut self, s: &str) -> Result<(), Error> {
        writeln!(self.w, "{s}").map_err(Error::Output)
    }

    fn block(&mut self, s: &str, indent: &str) -> Result<(), Error> {
        for l in s.lines() {
            self.line(&format!("{indent}{l}"))?;
        }
        Ok(())
    }
}

fn count(journal: &Journal, sql: &str) -> i64 {
    journal.store().conn().query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

/// Runs the first run; everything it says goes to `out`.
pub fn run(
    paths: &Paths,
    config: &Config,
    opts: &QuickstartOptions,
    now: Ts,
    out: &mut dyn Write,
    shutdown: &Shutdown,
) -> Result<QuickstartSummary, Error> {
    let mut o = Out { w: out };
    let mut summary = QuickstartSummary::default();
    let real = paths;
    o.line(&format!("Engram first run. Data home: {}", real.home().display()))?;
    o.line("")?;

    let roots = opts.roots.clone().unwrap_or_else(|| Roots::from_process_env().with_config(&config.scan));
    let sources = discover::discover(&roots)?;
    summary.sources = sources.len();
    summary.demo = opts.demo || sources.is_empty();
    let mut demo_sessions = Vec::new();
    // The demo runs in a data home of its own: its made-up memories never
    // reach a real session.
    let demo_paths = Paths::at(opts.demo_home.clone().unwrap_or_else(|| demo_data::demo_home(real)));
    let paths = if summary.demo { &demo_paths } else { real };
    summary.data_home = paths.home().to_path_buf();
    o.line("1. Agent history")?;
    if summary.demo {
        let why = if sources.is_empty() {
            let dirs: Vec<String> = roots.claude.iter().chain(&roots.codex).map(|p| p.display().to_string()).collect();
            format!("   No agent logs found (looked in {}).", dirs.join(", "))
        } else {
            format!("   {} agent log(s) found, but --demo asks for the demo corpus.", sources.len())
        };
        o.line(&why)?;
        if paths.home() == real.home() {
            o.line("   The demo goes into this data home, with your own memories (--demo-home).")?;
        } else {
            o.line(&format!(
                "   The demo runs in its own data home, {}, apart from your memories.",
                paths.home().display()
            ))?;
        }
        let dir = paths.home().join("corpus");
        let base = Ts(now.0 - DEMO_DAYS_AGO * 86_400_000);
        demo_sessions = demo::generate(&dir, base)?;
        let claude = demo_sessions.iter().filter(|s| s.harness == DemoHarness::Claude).count();
        o.line(&format!(
            "   Using the built-in demo corpus: {} sessions ({claude} Claude Code, {} Codex) on two demo projects,\n   written to {}.",
            demo_sessions.len(),
            demo_sessions.len() - claude,
            dir.display()
        ))?;
    } else {
        let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for s in &sources {
            *by.entry(s.kind.harness().name()).or_insert(0) += 1;
        }
        let list: Vec<String> = by.iter().map(|(h, n)| format!("{n} {h}")).collect();
        o.line(&format!("   Found {} log(s): {}.", sources.len(), list.join(", ")))?;
    }
    o.line("")?;

    o.line("2. Ingest: sessions → tapes → memories")?;
    let scan_summary = if summary.demo {
        let (s, rankings) = ingest_demo(paths, config, &demo_sessions, now, shutdown)?;
        summary.rankings = rankings;
        o.line(&format!(
            "   Replayed {} sessions as if the hooks had been installed: {rankings} rankings served and recorded.",
            demo_sessions.len()
        ))?;
        s
    } else {
        let mut sopts = ScanOptions::new(now);
        sopts.roots = Some(roots.clone());
        scan::run(paths, config, &sopts, shutdown, &mut |_| {})?
    };
    o.block(&render::scan_summary(&scan_summary), "   ")?;
    o.line("")?;

    let journal = shared::projection::open(paths, WRITER).context("open the journal")?;
    summary.sessions = count(&journal, "SELECT COUNT(*) FROM sessions");
    summary.memories = count(&journal, "SELECT COUNT(*) FROM memories WHERE is_deleted = 0");
    o.line(&format!("3. Memories learned: {}", summary.memories))?;
    let by_type: Vec<(String, i64)> = journal
        .store()
        .conn()
        .prepare("SELECT type, COUNT(*) FROM memories WHERE is_deleted = 0 GROUP BY type ORDER BY COUNT(*) DESC")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .unwrap_or_default();
    if !by_type.is_empty() {
        let list: Vec<String> = by_type.iter().map(|(t, n)| format!("{n} {t}")).collect();
        o.line(&format!("   by type: {}", list.join(", ")))?;
    }
    let filter = MemoryFilter { limit: SHOWN_MEMORIES, ..MemoryFilter::default() };
    for m in journal.store().memories(&filter).context("list memories")? {
        o.line(&format!("   - {} [{}] {}", m.id, m.memory_type, render::short(&m.content, 110)))?;
    }
    if summary.memories == 0 {
        o.line(
            "   (none yet: memories come from corrections, stated conventions, repeated failures and explained errors)",
        )?;
    }
    o.line("")?;

    let model = injection::load_model(paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot load the serving model; previewing with the baseline");
        None
    });
    let serving = model.as_ref().map(injection::LoadedModel::serving);
    o.line(&format!("4. What a session started in {} would get, and why", opts.cwd.display()))?;
    let preview = preview::preview_session_start(journal.store(), config, serving, &opts.cwd, now, 3)
        .context("preview the injection")?;
    summary.injected_here = preview.items.iter().filter(|i| i.injected).count();
    o.block(&preview.render(), "   ")?;
    if summary.demo
        && let Some(s) = demo_sessions.iter().rev().find(|s| s.project == "webapp")
    {
        o.line("")?;
        o.line(&format!("   The demo project {} at session start:", s.cwd))?;
        let p = preview::preview_session_start(journal.store(), config, serving, Path::new(&s.cwd), now, 2)
            .context("preview the injection")?;
        o.block(&p.render(), "   ")?;
        let prompt = "pnpm test fails with a Redis connection error, how do I run the tests?";
        let env = demo_env(&s.cwd);
        let moment = Moment { cwd: Some(&s.cwd), env: Some(&env), ..Moment::new(Kind::Prompt(prompt), now) };
        let p = preview::preview(journal.store(), config, serving, &moment, 2).context("preview a prompt")?;
        o.line("")?;
        o.line(&format!("   And at the prompt {prompt:?}:"))?;
        o.block(&p.render(), "   ")?;
    }
    drop(journal);
    o.line("")?;

    o.line("5. Training the predictor")?;
    let trainer = opts.bin_dir.join("engram-trainer");
    let served_sessions = {
        let j = shared::projection::open(paths, WRITER).context("open the journal")?;
        count(
            &j,
            "SELECT COUNT(DISTINCT r.session_key) FROM rankings r JOIN sessions s ON s.session_key = r.session_key
             WHERE s.ended_ms IS NOT NULL",
        )
    };
    if !opts.train {
        o.line("   Skipped (--no-train).")?;
    } else if !trainer.is_file() {
        o.line(&format!(
            "   engram-trainer is not in {}: build it (cargo build --profile dist) to train the predictor and write the report.",
            opts.bin_dir.display()
        ))?;
    } else if served_sessions == 0 {
        // No session was served yet: learn from the history instead, replayed
        // as if the hooks had been installed (`engram-trainer history`).
        match run_tool(&trainer, &["history"], paths) {
            Ok(text) => {
                summary.history = text.lines().next().map(str::to_owned);
                o.block(&text, "   ")?;
            }
            Err(why) => o.line(&format!("   The history replay failed: {why}"))?,
        }
        match run_tool(&trainer, &["run"], paths) {
            Ok(text) => {
                summary.trainer = text.lines().next().map(str::to_owned);
                o.block(&text, "   ")?;
            }
            Err(why) => o.line(&format!("   The trainer failed: {why}"))?,
        }
    } else {
        o.line(&format!(
            "   {served_sessions} ended session(s) with served rankings; running {} run …",
            trainer.display()
        ))?;
        match run_tool(&trainer, &["run"], paths) {
            Ok(text) if text.trim().is_empty() => o.line("   (engram-trainer printed nothing)")?,
            Ok(text) => {
                summary.trainer = text.lines().next().map(str::to_owned);
                o.block(&text, "   ")?;
            }
            Err(why) => o.line(&format!("   The trainer failed: {why}"))?,
        }
        if summary.demo {
            match pattern_preview(paths, config, &demo_sessions) {
                Ok(Some(lines)) => {
                    o.line("")?;
                    for l in lines {
                        o.line(&format!("   {l}"))?;
                    }
                }
                Ok(None) => {}
                Err(e) => o.line(&format!("   (no before/after preview: {e})"))?,
            }
        }
        let report = paths.home().join("report.html");
        let arg = report.to_string_lossy().into_owned();
        match run_tool(&trainer, &["report", "--html", &arg], paths) {
            Ok(_) if report.is_file() => {
                o.line(&format!("   Report: {}", report.display()))?;
                summary.report = Some(report);
            }
            Ok(_) => o.line("   The trainer wrote no report.")?,
            Err(why) => o.line(&format!("   The report failed: {why}"))?,
        }
    }
    o.line("")?;

    o.line("Summary")?;
    o.line(&format!(
        "   {} session(s) and {} memories in {}{}.",
        summary.sessions,
        summary.memories,
        paths.home().display(),
        if summary.demo { " (the demo's own data home)" } else { "" }
    ))?;
    o.line(&format!(
        "   A new session in {} would get {} memor{}.",
        opts.cwd.display(),
        summary.injected_here,
        if summary.injected_here == 1 { "y" } else { "ies" }
    ))?;
    let told = {
        let j = shared::projection::open(paths, WRITER).context("open the journal")?;
        shared::domain::training::history::told_twice(j.store()).context("count the lessons told twice")?
    };
    o.line(&told_twice_line(&told))?;
    summary.told_twice = told;
    o.line("")?;
    o.line("Next")?;
    let ingestor = shared::base::hint::command_for(&opts.bin_dir, "engram-ingestor");
    let scorer = shared::base::hint::command_for(&opts.bin_dir, "engram-scorer");
    // Looking around the demo needs its data home; installing does not.
    let look = if summary.demo && paths.home() != real.home() {
        format!("ENGRAM_HOME={} ", shared::base::hint::shell_word(&paths.home().display().to_string()))
    } else {
        String::new()
    };
    for (cmd, what) in [
        (format!("{ingestor} install claude"), "hooks + MCP server for Claude Code (--project DIR for one repo)"),
        (format!("{ingestor} install codex"), "the same for Codex CLI"),
        (format!("{look}{scorer} context"), "what a session here gets, and why"),
        (format!("{look}{scorer} search \"some words\""), "search memories"),
        (format!("{look}{ingestor} memory list"), "browse; memory pin|forget|feedback ID …"),
        (format!("{ingestor} uninstall claude"), "take it out again"),
    ] {
        o.line(&format!("   {cmd:<36} # {what}"))?;
    }
    Ok(summary)
}

/// The summary's "told twice" line: lessons given in two or more sessions,
/// how many a memory already held, and the projects with most of them.
fn told_twice_line(per_project: &[shared::domain::training::history::ToldTwice]) -> String {
    let all = shared::domain::training::history::total(per_project);
    let mut line = format!(
        "   Told twice: {} of {} lesson(s) were given in more than one session; a memory learned the first time already held {} of them ({} later giving(s) Engram would have spared).",
        all.given_more_than_once, all.lessons, all.held, all.repeats_held
    );
    let mut top: Vec<_> = per_project.iter().filter(|t| t.given_more_than_once > 0).collect();
    top.sort_by(|a, b| b.given_more_than_once.cmp(&a.given_more_than_once).then_with(|| a.project.cmp(&b.project)));
    if !top.is_empty() {
        let parts: Vec<String> = top
            .iter()
            .take(4)
            .map(|t| {
                format!("{} {}/{} held", t.project.as_deref().unwrap_or("(no project)"), t.held, t.given_more_than_once)
            })
            .collect();
        line.push_str(&format!("\n   By project: {}.", parts.join(", ")));
    }
    line
}

/// Runs a sibling tool with the same data home; its stdout, or why it failed.
fn run_tool(exe: &Path, args: &[&str], paths: &Paths) -> Result<String, String> {
    let out = Command::new(exe)
        .args(args)
        .env("ENGRAM_HOME", paths.home())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        Err(format!("{} ({})", tail.into_iter().rev().collect::<Vec<_>>().join(" / "), out.status))
    }
}

fn key(s: &DemoSession) -> SessionKey {
    let h = match s.harness {
        DemoHarness::Claude => shared::storage::event::harness::CLAUDE,
        DemoHarness::Codex => shared::storage::event::harness::CODEX,
    };
    SessionKey::new(h, &s.id)
}

/// The project a demo session's folder is to the hooks: its detected key
/// (which the scan gives its memories) and name (which its query names).
fn demo_env(cwd: &str) -> shared::storage::event::EnvDetected {
    let options = shared::domain::env::DetectOptions::from_env(&shared::base::config::EnvConfig::default(), false);
    shared::domain::env::detect(Path::new(cwd), &options)
}

/// Ingests the demo sessions in time order, each preceded by the rankings
/// its hooks would have served; returns the scans' total and the rankings.
fn ingest_demo(
    paths: &Paths,
    config: &Config,
    sessions: &[DemoSession],
    now: Ts,
    shutdown: &Shutdown,
) -> Result<(ScanSummary, usize), Error> {
    let tz = injection::time_zone(config);
    let mut total = ScanSummary::default();
    let mut rankings = 0;
    for s in sessions {
        let session = key(s);
        {
            let mut journal = shared::projection::open(paths, WRITER).context("open the journal")?;
            let already: i64 = journal
                .store()
                .conn()
                .query_row("SELECT COUNT(*) FROM rankings WHERE session_key = ?1", [session.as_str()], |r| r.get(0))
                .unwrap_or(0);
            if already == 0 {
                let env = demo_env(&s.cwd);
                let mut ctx = SessionContext::load(
                    journal.store(),
                    Some(env.project.clone()),
                    Some(s.cwd.clone()),
                    Some("main".into()),
                    Some(&session),
                )
                .context("read the session context")?;
                ctx.name = Some(env.name.clone());
                let mut moments: Vec<(Ts, &str, String)> = vec![(s.start, trigger::SESSION_START, ctx.query())];
                moments.extend(s.prompts.iter().map(|(t, p)| (*t, trigger::PROMPT, p.clone())));
                for (at, trig, query) in moments {
                    let served = injection::serve(
                        journal.store(),
                        config,
                        None,
                        &tz,
                        &ServeRequest {
                            session: Some(&session),
                            project: Some(&env.project),
                            env: Some(&env),
                            ..ServeRequest::new(trig, &query, at)
                        },
                    )
                    .context("serve a demo ranking")?;
                    if served.ranking.served.candidates.is_empty() {
                        continue;
                    }
                    let fts: Vec<_> = served
                        .ranking
                        .items
                        .iter()
                        .filter(|it| it.memory.signals.bm25_rank.is_some_and(|r| r <= 10))
                        .map(|it| it.memory.id.clone())
                        .collect();
                    let ranking_id = served.ranking.ranking_id.clone();
                    let mut events =
                        vec![Event::new(at, WRITER, Some(session.clone()), Body::RankingServed(served.ranking.served))];
                    if trig == trigger::PROMPT && !fts.is_empty() {
                        events.push(Event::new(
                            at,
                            WRITER,
                            Some(session.clone()),
                            Body::FtsHits(FtsHits { ranking_id: Some(ranking_id), memory_ids: fts }),
                        ));
                    }
                    journal.append(&events).context("record a demo ranking")?;
                    rankings += 1;
                }
            }
        }
        let mut sopts = ScanOptions::new(now);
        sopts.paths = vec![s.path.clone()];
        let one = scan::run(paths, config, &sopts, shutdown, &mut |_| {})?;
        merge(&mut total, &one);
    }
    Ok((total, rankings))
}

fn merge(total: &mut ScanSummary, one: &ScanSummary) {
    for (h, s) in &one.harnesses {
        let t = total.harnesses.entry(h.clone()).or_default();
        t.files += s.files;
        t.files_read += s.files_read;
        t.bytes += s.bytes;
        t.sessions += s.sessions;
        t.sessions_touched += s.sessions_touched;
        t.sessions_ended += s.sessions_ended;
        t.events += s.events;
        t.known += s.known;
        t.memories_added += s.memories_added;
        t.memories_merged += s.memories_merged;
        t.diagnostics += s.diagnostics;
    }
    total.events_appended += one.events_appended;
    total.cursors += one.cursors;
    total.last_lsn = one.last_lsn;
    total.elapsed_ms += one.elapsed_ms;
}

/// One query's ranking before training (the baseline's order) and after (the
/// promoted model's own order): a `webapp` session starting at the demo
/// routines' morning hour, whose lessons are marked. `None` without a model.
fn pattern_preview(paths: &Paths, config: &Config, sessions: &[DemoSession]) -> Result<Option<Vec<String>>, Error> {
    const SHOWN: usize = 5;
    let Some(model) = injection::load_model(paths).context("load the serving model")? else { return Ok(None) };
    let Some(last) = sessions.iter().filter(|s| s.project == "webapp").max_by_key(|s| s.start) else {
        return Ok(None);
    };
    let journal = shared::projection::open(paths, WRITER).context("open the journal")?;
    let store = journal.store();
    let (routine, hour) = demo::ROUTINE_HOURS[0];
    let lessons = demo::ROUTINE_LESSONS.iter().find(|(k, _)| *k == routine).map_or(&[][..], |(_, w)| *w);
    // The routines' hours are UTC hours: the next such morning after the corpus.
    let day = 86_400_000;
    let mut at = Ts(last.start.0 - last.start.0.rem_euclid(day) + hour * 3_600_000);
    while at <= last.start {
        at = Ts(at.0 + day);
    }
    let env = demo_env(&last.cwd);
    let mut ctx =
        SessionContext::load(store, Some(env.project.clone()), Some(last.cwd.clone()), Some("main".into()), None)
            .context("read the session context")?;
    ctx.name = Some(env.name.clone());
    let query = ctx.query();
    let tz = injection::time_zone(config);
    let req = shared::domain::rank::RankRequest {
        query: &query,
        query_embedding: None,
        session: None,
        project: Some(&env.project),
        trigger: trigger::SESSION_START,
        now: at,
        tz: &tz,
        k: config.injection.session_start_k,
        budget_chars: config.injection.budget_chars,
        require_match: false,
        explore_draw: 1.0,
        context_reset_ms: None,
    };
    let ranking = shared::domain::rank::rank(store, config, Some(model.serving()), &req).context("rank the preview")?;
    let needed = |text: &str| {
        let lower = text.to_lowercase();
        lessons.iter().any(|w| lower.contains(w))
    };
    let order = |rank: &dyn Fn(&shared::domain::rank::RankedMemory) -> Option<u32>| -> Vec<&shared::domain::rank::RankedMemory> {
        let mut v: Vec<_> = ranking.items.iter().filter(|i| rank(i).is_some()).collect();
        v.sort_by_key(|i| rank(i));
        v
    };
    let before = order(&|i| Some(i.baseline_rank));
    let after = order(&|i| i.predictor_rank);
    let hits =
        |v: &[&shared::domain::rank::RankedMemory]| v.iter().take(SHOWN).filter(|i| needed(&i.memory.content)).count();
    let line = |n: usize, i: &shared::domain::rank::RankedMemory| {
        let mark = if needed(&i.memory.content) { "*" } else { " " };
        format!("    {n}. [{mark}] {}", render::short(&i.memory.content, 96))
    };
    let mut out = vec![
        format!(
            "One query before and after training: a session starting in {} at {hour:02}:00 UTC, when this",
            last.cwd
        ),
        format!(
            "user's routine needs the lessons marked [*] ({}); nothing in the query names them.",
            lessons.join(", ")
        ),
        format!("   Before (the baseline's order): {} of the top {SHOWN} marked", hits(&before)),
    ];
    out.extend(before.iter().take(SHOWN).enumerate().map(|(n, i)| line(n + 1, i)));
    out.push(format!("   After (model v{}'s own order): {} of the top {SHOWN} marked", model.version, hits(&after)));
    out.extend(after.iter().take(SHOWN).enumerate().map(|(n, i)| line(n + 1, i)));
    out.push(format!(
        "The model's order is served once it beats the baseline in your own sessions (now α {:.2}{}).",
        ranking.alpha,
        if ranking.alpha >= 1.0 { ", cold start" } else { "" }
    ));
    Ok(Some(out))
}
