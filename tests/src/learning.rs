//! Simulated weeks of one user's Claude Code sessions, played only through
//! Engram's installed hooks and the transcripts they leave ([`crate::driver`]),
//! to show that the predictor learns by itself: no command is run but what a
//! user runs (`install claude`), the trainer only ever runs because the hooks
//! started it, and the clock is the world's (`ENGRAM_NOW`).
//!
//! **The user.** On the first day they teach the agent their conventions in
//! plain prompts, which Engram's extraction turns into memories: six about
//! deploying project `atlas`, six about its billing, eight general
//! conventions of `atlas` (stated with "always"/"never", so more important to
//! the baseline) and five about project `borealis`. Then, every day:
//!
//! | time | project | the session needs | the prompts |
//! |---|---|---|---|
//! | 09:00 | atlas | one of the deploy memories | say which in one session of three |
//! | 15:00 (odd days) | borealis | one of its memories | always name it |
//! | 19:00 | atlas | one of the billing memories | say which in one session of three |
//!
//! **The planted pattern** is the time of day: which `atlas` memories matter
//! depends only on the hour, which the baseline (BM25 of the query + effective
//! score + project) cannot see; the session-start query even misleads it
//! (it carries the previous session's files, from the other group). The
//! agent uses a memory it was given (an edit with its path and identifier);
//! one it was not given, it looks for first (a `grep` whose output holds
//! them): the evidence the continuity scorer labels from.
//!
//! **Figures** ([`Figures`]) come from what Engram recorded: the training
//! runs and promotions, the comparisons (wins, losses, ties), α and cold
//! start, and the NDCG@10 of the session-start rankings of planted sessions
//! against the planted truth (every memory of the needed group is relevant),
//! for the served (fused) order, the baseline's and the predictor's, over the
//! first days after the memories exist and over the last week.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shared::domain::rank::state::PredictorState;

use crate::driver::claude::ToolUse;
use crate::driver::{Binaries, GitSpec, ProjectSpec, Result, World, err};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// Which memories a planted memory belongs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// `atlas`, needed in the morning.
    Deploy,
    /// `atlas`, needed in the evening.
    Billing,
    /// `atlas`, never needed (what the baseline prefers).
    General,
    /// `borealis`, needed in the afternoon and always named.
    Borealis,
}

/// One planted memory: the sentence the user says, and what using it looks like.
#[derive(Clone, Copy, Debug)]
pub struct Planted {
    /// Its group.
    pub group: Group,
    /// The word a prompt names it by.
    pub word: &'static str,
    /// The file it is about (relative to its project).
    pub path: &'static str,
    /// The identifier it names.
    pub ident: &'static str,
    /// What the user says (extraction keeps this sentence).
    pub text: &'static str,
}

const fn p(group: Group, word: &'static str, path: &'static str, ident: &'static str, text: &'static str) -> Planted {
    Planted { group, word, path, ident, text }
}

/// The user's conventions, as they state them on the first day.
pub const PLANTED: &[Planted] = &[
    p(
        Group::Deploy,
        "alder",
        "scripts/deploy_alder.sh",
        "DEPLOY_ALDER_READY",
        "Make sure scripts/deploy_alder.sh runs against staging first and prints DEPLOY_ALDER_READY.",
    ),
    p(
        Group::Deploy,
        "birch",
        "bin/drain_birch",
        "BIRCH_QUEUE_EMPTY",
        "Make sure the queue workers are drained with bin/drain_birch until BIRCH_QUEUE_EMPTY shows up.",
    ),
    p(
        Group::Deploy,
        "cedar",
        "ops/cedar_migrate.py",
        "CEDAR_LOCK_TIMEOUT",
        "Make sure cedar migrations go out through ops/cedar_migrate.py with CEDAR_LOCK_TIMEOUT raised.",
    ),
    p(
        Group::Deploy,
        "dogwood",
        "tools/purge_dogwood.sh",
        "DOGWOOD_PURGE_KEY",
        "Make sure the CDN cache is purged via tools/purge_dogwood.sh using the DOGWOOD_PURGE_KEY token.",
    ),
    p(
        Group::Deploy,
        "elm",
        "config/elm_flags.yaml",
        "ELM_FREEZE",
        "Make sure feature flags get frozen in config/elm_flags.yaml by setting ELM_FREEZE beforehand.",
    ),
    p(
        Group::Deploy,
        "fir",
        "deploy/fir_probe.ts",
        "FIR_PROBE_OK",
        "Make sure the health probe in deploy/fir_probe.ts reports FIR_PROBE_OK after each rollout.",
    ),
    p(
        Group::Billing,
        "iris",
        "ledger/iris_invoices.csv",
        "BILLING_IRIS_RATE",
        "Make sure ledger/iris_invoices.csv is reconciled against BILLING_IRIS_RATE after the close.",
    ),
    p(
        Group::Billing,
        "juniper",
        "finance/juniper_refunds.rb",
        "JUNIPER_REFUND_CAP",
        "Make sure refunds in finance/juniper_refunds.rb respect the JUNIPER_REFUND_CAP limit.",
    ),
    p(
        Group::Billing,
        "kale",
        "reports/kale_vat.sql",
        "KALE_VAT_REGION",
        "Make sure the tax export reports/kale_vat.sql filters on KALE_VAT_REGION correctly.",
    ),
    p(
        Group::Billing,
        "lotus",
        "jobs/lotus_payout.ts",
        "LOTUS_PAYOUT_WINDOW",
        "Make sure payouts batch through jobs/lotus_payout.ts only while LOTUS_PAYOUT_WINDOW is open.",
    ),
    p(
        Group::Billing,
        "maple",
        "mail/maple_dunning.erb",
        "MAPLE_GRACE_DAYS",
        "Make sure the dunning mails from mail/maple_dunning.erb honour MAPLE_GRACE_DAYS.",
    ),
    p(
        Group::Billing,
        "nettle",
        "lib/nettle_money.rs",
        "NETTLE_MINOR_UNITS",
        "Make sure currency rounding in lib/nettle_money.rs keeps NETTLE_MINOR_UNITS at two.",
    ),
    p(
        Group::General,
        "quartz",
        "docs/quartz_overview.md",
        "QUARTZ_DASHBOARD_URL",
        "Always keep docs/quartz_overview.md current whenever QUARTZ_DASHBOARD_URL changes.",
    ),
    p(
        Group::General,
        "ruby",
        "scripts/ruby_lint.sh",
        "RUBY_LINT_STRICT",
        "Always run scripts/ruby_lint.sh with RUBY_LINT_STRICT before opening a pull request.",
    ),
    p(
        Group::General,
        "sapphire",
        "config/sapphire_vault.json",
        "SAPPHIRE_VAULT_PATH",
        "Never commit secrets: config/sapphire_vault.json points SAPPHIRE_VAULT_PATH at the vault.",
    ),
    p(
        Group::General,
        "topaz",
        "CHANGELOG.md",
        "TOPAZ_UNRELEASED",
        "Always add a line to CHANGELOG.md under the TOPAZ_UNRELEASED heading for every change.",
    ),
    p(
        Group::General,
        "umber",
        ".nvmrc",
        "UMBER_NODE_VERSION",
        "Always pin Node in .nvmrc so that UMBER_NODE_VERSION matches what CI uses.",
    ),
    p(
        Group::General,
        "violet",
        "hooks/pre_push_violet",
        "VIOLET_SMOKE",
        "Never skip hooks/pre_push_violet when pushing; it runs the VIOLET_SMOKE suite.",
    ),
    p(
        Group::General,
        "walnut",
        "src/components/walnut_index.ts",
        "WALNUT_NAMED_EXPORTS",
        "Never use default exports in src/components/walnut_index.ts, WALNUT_NAMED_EXPORTS lint rule.",
    ),
    p(
        Group::General,
        "xenon",
        "docker/xenon.compose.yml",
        "XENON_DB_PORT",
        "Always start the database from docker/xenon.compose.yml so XENON_DB_PORT stays fixed.",
    ),
    p(
        Group::Borealis,
        "aurora",
        "src/aurora_service.rs",
        "AURORA_RETRY_LIMIT",
        "Make sure the aurora service reads AURORA_RETRY_LIMIT from src/aurora_service.rs.",
    ),
    p(
        Group::Borealis,
        "caribou",
        "src/caribou_export.rs",
        "CARIBOU_BATCH",
        "Make sure caribou exports go through src/caribou_export.rs with CARIBOU_BATCH set.",
    ),
    p(
        Group::Borealis,
        "fjord",
        "src/fjord_client.rs",
        "FJORD_TIMEOUT_MS",
        "Make sure fjord timeouts live in src/fjord_client.rs next to FJORD_TIMEOUT_MS.",
    ),
    p(
        Group::Borealis,
        "glacier",
        "src/glacier_snap.rs",
        "GLACIER_KEEP_DAYS",
        "Make sure glacier snapshots use src/glacier_snap.rs and GLACIER_KEEP_DAYS.",
    ),
    p(
        Group::Borealis,
        "heron",
        "src/heron_alerts.rs",
        "HERON_PAGER_ID",
        "Make sure heron alerts route via src/heron_alerts.rs using HERON_PAGER_ID.",
    ),
];

/// How to run the simulation.
#[derive(Clone, Debug)]
pub struct Options {
    /// Weeks of daily sessions after the first day's teaching.
    pub weeks: u32,
    /// Seed of the user's choices (which memory a session needs, which prompts name it).
    pub seed: u64,
    /// Extra `config.toml` lines for the data home (none: every default).
    pub config: String,
    /// How long to wait for Engram's background work after a session.
    pub settle: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options { weeks: 3, seed: 16, config: String::new(), settle: Duration::from_secs(180) }
    }
}

/// NDCG@10 of the three orders of a set of rankings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ndcg {
    /// The served (fused) order.
    pub served: f64,
    /// The baseline's order.
    pub baseline: f64,
    /// The predictor's order (`None` when no model scored them).
    pub predictor: Option<f64>,
    /// Rankings measured.
    pub rankings: usize,
}

/// What the simulation measured.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Days simulated (the teaching day included).
    pub days: u32,
    /// Sessions played.
    pub sessions: u32,
    /// Planted memories that extraction learned, of [`PLANTED`].
    pub memories_learned: usize,
    /// Training runs the hooks' trainer runs made, and how many were promoted.
    pub training_runs: u32,
    /// Of which promoted.
    pub promotions: u32,
    /// The serving model's version at the end.
    pub model_version: Option<u64>,
    /// The day of the first promotion.
    pub first_promotion_day: Option<u32>,
    /// Comparisons that updated the success rate (the predictor had a ranking).
    pub comparisons: u32,
    /// Of which the predictor won (NDCG@10 above the baseline's).
    pub wins: u32,
    /// Of which it lost.
    pub losses: u32,
    /// The success rate (EMA) at the end.
    pub success_rate: f32,
    /// Cold start was left.
    pub cold_start_exited: bool,
    /// The day it was left.
    pub cold_start_exit_day: Option<u32>,
    /// α at the end, and the lowest served.
    pub alpha: f32,
    /// The lowest α a ranking was served with.
    pub min_alpha: f32,
    /// Session starts of planted sessions in the first days after the memories exist.
    pub before: Ndcg,
    /// The same in the last week.
    pub after: Ndcg,
    /// Sessions whose needed memory was in the agent's context before it used it,
    /// first week and last week.
    pub given_before: (u32, u32),
    /// The same, last week.
    pub given_after: (u32, u32),
    /// `engram-trainer run` summaries from `logs/trainer.log`.
    pub trainer_lines: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

impl Figures {
    /// Wins over all comparisons.
    pub fn win_rate(&self) -> f64 {
        if self.comparisons == 0 { 0.0 } else { f64::from(self.wins) / f64::from(self.comparisons) }
    }
}

fn ndcg_row(n: &Ndcg) -> String {
    format!(
        "served {:.3}   baseline {:.3}   predictor {}   ({} rankings)",
        n.served,
        n.baseline,
        n.predictor.map_or("-".to_owned(), |p| format!("{p:.3}")),
        n.rankings
    )
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Simulated use: {} days, {} sessions through the hooks ({:.0} s)",
            self.days,
            self.sessions,
            self.elapsed.as_secs_f64()
        )?;
        writeln!(f, "  planted memories learned by extraction   {} of {}", self.memories_learned, PLANTED.len())?;
        writeln!(
            f,
            "  training runs (started by the hooks)     {} ({} promoted; first promotion on day {}); serving model {}",
            self.training_runs,
            self.promotions,
            self.first_promotion_day.map_or("-".to_owned(), |d| d.to_string()),
            self.model_version.map_or("none".to_owned(), |v| format!("v{v}"))
        )?;
        writeln!(
            f,
            "  cold start                               {} (day {})",
            if self.cold_start_exited { "left" } else { "not left" },
            self.cold_start_exit_day.map_or("-".to_owned(), |d| d.to_string())
        )?;
        writeln!(
            f,
            "  comparisons with the baseline            {} won, {} lost, {} tied of {} ({:.0}% won)",
            self.wins,
            self.losses,
            self.comparisons - self.wins - self.losses,
            self.comparisons,
            100.0 * self.win_rate()
        )?;
        writeln!(
            f,
            "  success rate {:.2}, α {:.2} at the end (lowest served {:.2})",
            self.success_rate, self.alpha, self.min_alpha
        )?;
        writeln!(f, "  NDCG@10 of planted session starts, first days:  {}", ndcg_row(&self.before))?;
        writeln!(f, "  NDCG@10 of planted session starts, last week:   {}", ndcg_row(&self.after))?;
        writeln!(
            f,
            "  needed memory in context before use: first week {}/{}, last week {}/{}",
            self.given_before.0, self.given_before.1, self.given_after.0, self.given_after.1
        )?;
        Ok(())
    }
}

/// A deterministic choice below `n`, keyed by the seed and what is chosen.
fn choose(seed: u64, what: &str, n: usize) -> usize {
    let h = blake3::hash(format!("{seed}\0{what}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    (u64::from_le_bytes(b) % n.max(1) as u64) as usize
}

/// One session of the schedule.
#[derive(Clone, Copy, Debug)]
struct Planned {
    day: u32,
    hour: i64,
    group: Group,
    needed: &'static Planted,
    named: bool,
}

/// The simulation in progress.
struct Sim<'w> {
    world: &'w World,
    start_ms: i64,
    atlas: PathBuf,
    borealis: PathBuf,
    sessions: u32,
    /// Planted sessions: (day, session id, group, whether the needed memory was given before use).
    log: Vec<(u32, String, Group, bool)>,
}

impl Sim<'_> {
    /// Moves the world's clock to `day` at `hour`.
    fn at(&self, day: u32, hour: i64) {
        let target = self.start_ms + i64::from(day) * DAY + hour * HOUR;
        let now = self.world.now().millis();
        if target > now {
            self.world.advance(Duration::from_millis(u64::try_from(target - now).unwrap_or(0)));
        }
    }

    fn cwd(&self, group: Group) -> &Path {
        if group == Group::Borealis { &self.borealis } else { &self.atlas }
    }

    /// Waits for Engram's background work, the trainer run the hooks may
    /// have started included (the time between two sessions).
    fn settle(&self, what: &str, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let paths = shared::base::paths::Paths::at(self.world.engram_home());
        let train_lock = shared::domain::training::auto::lock_file(&paths);
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            // The driver's settle may give up on a lock held long (a training
            // run): then the trainer's own lock says whether work remains.
            let settled = self.world.settle(left);
            let trainer_idle = matches!(shared::base::fsutil::FileLock::try_exclusive(&train_lock), Ok(Some(_)));
            if settled && trainer_idle {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(err!("Engram's background work (or its trainer run) did not settle after {what}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The first day: the user states their conventions.
    fn teach(&mut self, group: Group, hour: i64, settle: Duration) -> Result<()> {
        self.at(0, hour);
        self.sessions += 1;
        let id = format!("00000000-0000-4000-8000-{:012}", self.sessions);
        let cwd = self.cwd(group).to_path_buf();
        let mut s = self.world.claude_session(&id, &cwd);
        s.start("startup")?;
        let planted: Vec<&Planted> = PLANTED.iter().filter(|p| p.group == group).collect();
        // One convention a prompt: extraction keeps one memory per message.
        for p in planted {
            s.prompt(p.text)?;
            s.say("Noted, I will follow that.")?;
        }
        s.tool(&ToolUse::bash("git status --short", 0, ""))?;
        s.prompt("Thanks, that is all for today.")?;
        s.say("You're welcome.")?;
        s.end("prompt_input_exit")?;
        self.settle("a teaching session", settle)
    }

    /// One working session of the schedule.
    fn work(&mut self, plan: &Planned, settle: Duration) -> Result<()> {
        self.at(plan.day, plan.hour);
        self.sessions += 1;
        let id = format!("{:08x}-0000-4000-8000-{:012}", plan.day, self.sessions);
        let cwd = self.cwd(plan.group).to_path_buf();
        let m = plan.needed;
        let mut shown = String::new();
        let take = |shown: &mut String, calls: Vec<crate::driver::HookCall>| {
            for c in calls {
                if let Some(ctx) = c.context {
                    shown.push_str(&ctx);
                    shown.push('\n');
                }
            }
        };
        let mut s = self.world.claude_session(&id, &cwd);
        take(&mut shown, s.start("startup")?);
        let prompt = match (plan.group, plan.named) {
            (Group::Borealis, _) => format!("The {} code needs another look today.", m.word),
            (_, true) => format!("Let's start with the {} part today.", m.word),
            (Group::Deploy, false) => "Let's get the day started, the usual first round please.".to_owned(),
            (_, false) => "Let's wrap up the day, the usual last round please.".to_owned(),
        };
        take(&mut shown, s.prompt(&prompt)?);
        take(&mut shown, s.tool(&ToolUse::read(&cwd.join("README.md").to_string_lossy(), "# project\n"))?);
        let given = shown.contains(m.ident);
        if !given {
            // Not given: the agent has to go and find it.
            let out = format!("{}:3:{}=0\n", m.path, m.ident);
            take(&mut shown, s.tool(&ToolUse::bash(&format!("grep -rn {} .", m.word), 0, &out))?);
        }
        let file = cwd.join(m.path).to_string_lossy().into_owned();
        take(&mut shown, s.tool(&ToolUse::edit(&file, &format!("{}=0", m.ident), &format!("{}=1", m.ident)))?);
        s.say(&format!("Set {} in {}.", m.ident, m.path))?;
        for cmd in ["npm test", "npm run build", "git diff --stat"] {
            take(&mut shown, s.tool(&ToolUse::bash(cmd, 0, "ok"))?);
        }
        s.say("Done, everything passes.")?;
        s.prompt("Thanks, that's all.")?;
        s.say("You're welcome.")?;
        s.end("prompt_input_exit")?;
        self.log.push((plan.day, id, plan.group, given));
        self.settle(&format!("session {} on day {}", self.sessions, plan.day), settle)
    }
}

/// The working sessions of `weeks` weeks (days 1 to 7·weeks).
fn schedule(weeks: u32, seed: u64) -> Vec<Planned> {
    let plan = |day: u32, hour: i64, group: Group| -> Planned {
        let of: Vec<&'static Planted> = PLANTED.iter().filter(|p| p.group == group).collect();
        let what = format!("{day}:{hour}");
        let needed = of[choose(seed, &format!("{what}:memory"), of.len())];
        let named = group == Group::Borealis || choose(seed, &format!("{what}:named"), 3) == 0;
        Planned { day, hour, group, needed, named }
    };
    let mut out = Vec::new();
    for day in 1..=weeks * 7 {
        out.push(plan(day, 9, Group::Deploy));
        if day % 2 == 1 {
            out.push(plan(day, 15, Group::Borealis));
        }
        out.push(plan(day, 19, Group::Billing));
    }
    out
}

/// NDCG@10 of `order` (memory ids, best first) when `relevant` are the relevant ones.
fn ndcg10(order: &[String], relevant: &BTreeSet<String>) -> f64 {
    let dcg: f64 = order
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| relevant.contains(*id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    if ideal > 0.0 { dcg / ideal } else { 0.0 }
}

/// A recorded candidate: memory id, final rank, baseline rank, predictor rank.
type CandidateRow = (String, i64, i64, Option<i64>);

/// NDCG@10 of the session-start rankings of `sessions` (id → group).
fn measure(
    store: &shared::storage::store::Store,
    sessions: &[(String, Group)],
    ids: &BTreeMap<Group, BTreeSet<String>>,
) -> Result<Ndcg> {
    let conn = store.conn();
    let sql = "SELECT c.memory_id, c.rank, c.baseline_rank, c.predictor_rank FROM rankings r
               JOIN ranking_candidates c ON c.ranking_id = r.ranking_id
               WHERE r.session_key = ?1 AND r.trigger = 'session_start'";
    let mut stmt = conn.prepare(sql).map_err(|e| err!("{e}"))?;
    let (mut served, mut baseline, mut predictor, mut with_predictor, mut n) = (0.0, 0.0, 0.0, 0usize, 0usize);
    for (id, group) in sessions {
        let key = format!("claude:{id}");
        let rows: Vec<CandidateRow> = stmt
            .query_map([&key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| err!("{e}"))?;
        if rows.is_empty() {
            continue;
        }
        let relevant = ids.get(group).cloned().unwrap_or_default();
        let order = |key: &dyn Fn(&CandidateRow) -> Option<i64>| -> Vec<String> {
            let mut v: Vec<(i64, String)> = rows.iter().filter_map(|r| key(r).map(|k| (k, r.0.clone()))).collect();
            v.sort();
            v.into_iter().map(|(_, id)| id).collect()
        };
        served += ndcg10(&order(&|r| Some(r.1)), &relevant);
        baseline += ndcg10(&order(&|r| Some(r.2)), &relevant);
        if rows.iter().any(|r| r.3.is_some()) {
            predictor += ndcg10(&order(&|r| r.3), &relevant);
            with_predictor += 1;
        }
        n += 1;
    }
    let mean = |x: f64, k: usize| if k == 0 { 0.0 } else { x / k as f64 };
    Ok(Ndcg {
        served: mean(served, n),
        baseline: mean(baseline, n),
        predictor: (with_predictor > 0).then(|| mean(predictor, with_predictor)),
        rankings: n,
    })
}

/// Plays the simulation (see the module documentation); `progress` hears
/// one line per day.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<Figures> {
    let started = Instant::now();
    let bins = Binaries::built();
    // The hooks' worker starts the trainer that sits next to the ingestor.
    crate::build_bin("trainer", "engram-trainer");
    let world = World::new(bins)?;
    std::fs::create_dir_all(world.engram_home()).map_err(|e| err!("{e}"))?;
    std::fs::write(world.engram_home().join("config.toml"), &opts.config).map_err(|e| err!("{e}"))?;
    let project = |dir: &str, files: &[(&str, &str)]| -> Result<PathBuf> {
        world.project(&ProjectSpec {
            dir: dir.into(),
            files: files.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            git: Some(GitSpec { remote: Some(format!("git@example.com:me/{dir}.git")), ..GitSpec::default() }),
        })
    };
    let atlas = project("atlas", &[("package.json", "{\"name\": \"atlas\"}\n"), ("README.md", "# atlas\n")])?;
    let borealis =
        project("borealis", &[("Cargo.toml", "[package]\nname = \"borealis\"\n"), ("README.md", "# borealis\n")])?;
    // Day 0 starts at the next midnight (UTC) a day from now.
    let now = world.now().millis();
    let start_ms = (now / DAY + 2) * DAY;
    let mut sim = Sim { world: &world, start_ms, atlas, borealis, sessions: 0, log: Vec::new() };

    for (group, hour) in [(Group::Deploy, 9), (Group::General, 13), (Group::Borealis, 15), (Group::Billing, 19)] {
        sim.teach(group, hour, opts.settle)?;
    }
    let learned = world.memories()?;
    let mut ids: BTreeMap<Group, BTreeSet<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    for p in PLANTED {
        match learned.iter().find(|m| m.content.contains(p.ident)) {
            Some(m) => {
                ids.entry(p.group).or_default().insert(m.id.clone());
            }
            None => missing.push(p.ident),
        }
    }
    let memories_learned = PLANTED.len() - missing.len();
    if !missing.is_empty() {
        return Err(err!("extraction did not learn the planted conventions {missing:?} (learned: {learned:#?})"));
    }
    progress(&format!("day 0: {} conventions taught, {memories_learned} memories learned", PLANTED.len()));

    let plan = schedule(opts.weeks, opts.seed);
    let mut day = 0;
    for p in &plan {
        if p.day != day {
            if day > 0 {
                progress(&day_line(&world, day)?);
            }
            day = p.day;
        }
        sim.work(p, opts.settle)?;
    }
    progress(&day_line(&world, day)?);

    // Measure.
    let store = shared::storage::store::Store::open(&world.engram_home().join("engram.db")).map_err(|e| err!("{e}"))?;
    let config =
        shared::base::config::Config::load(&world.engram_home().join("config.toml")).map_err(|e| err!("{e}"))?;
    let state = PredictorState::load(&store, &config.predictor).map_err(|e| err!("{e}"))?;
    let conn = store.conn();
    let q = |sql: &str| -> Result<i64> { conn.query_row(sql, [], |r| r.get(0)).map_err(|e| err!("{sql}: {e}")) };
    let day_of = |ms: Option<i64>| ms.map(|t| u32::try_from((t - start_ms).div_euclid(DAY)).unwrap_or(0));
    let first_promotion: Option<i64> =
        conn.query_row("SELECT MIN(promoted_ms) FROM models", [], |r| r.get(0)).map_err(|e| err!("{e}"))?;
    let exit: Option<i64> = conn
        .query_row("SELECT MIN(created_ms) FROM predictor_comparisons WHERE cold_start_exited = 1", [], |r| r.get(0))
        .map_err(|e| err!("{e}"))?;
    let min_alpha: Option<f64> =
        conn.query_row("SELECT MIN(alpha) FROM rankings", [], |r| r.get(0)).map_err(|e| err!("{e}"))?;
    let last = plan.last().map_or(0, |p| p.day);
    let planted = |from: u32, to: u32| -> Vec<(String, Group)> {
        sim.log
            .iter()
            .filter(|(d, _, g, _)| *d >= from && *d <= to && *g != Group::Borealis)
            .map(|(_, id, g, _)| (id.clone(), *g))
            .collect()
    };
    let given = |from: u32, to: u32| -> (u32, u32) {
        let of: Vec<bool> = sim.log.iter().filter(|(d, ..)| *d >= from && *d <= to).map(|(.., g)| *g).collect();
        (of.iter().filter(|g| **g).count() as u32, of.len() as u32)
    };
    let first_week_end = 5.min(last);
    let last_week_start = last.saturating_sub(6).max(1);
    let trainer_log = std::fs::read_to_string(world.engram_home().join("logs/trainer.log")).unwrap_or_default();
    let figures = Figures {
        days: last + 1,
        sessions: sim.sessions,
        memories_learned,
        training_runs: q("SELECT COUNT(*) FROM predictor_training_log")? as u32,
        promotions: q("SELECT COUNT(*) FROM models")? as u32,
        model_version: state.model_version,
        first_promotion_day: day_of(first_promotion),
        comparisons: q("SELECT COUNT(*) FROM predictor_comparisons WHERE ema_updated = 1")? as u32,
        wins: q("SELECT COUNT(*) FROM predictor_comparisons WHERE ema_updated = 1 AND margin > 1e-6")? as u32,
        losses: q("SELECT COUNT(*) FROM predictor_comparisons WHERE ema_updated = 1 AND margin < -1e-6")? as u32,
        success_rate: state.success_rate,
        cold_start_exited: state.cold_start_exited,
        cold_start_exit_day: day_of(exit),
        alpha: state.alpha,
        min_alpha: min_alpha.unwrap_or(1.0) as f32,
        before: measure(&store, &planted(1, first_week_end), &ids)?,
        after: measure(&store, &planted(last_week_start, last), &ids)?,
        given_before: given(1, first_week_end),
        given_after: given(last_week_start, last),
        trainer_lines: trainer_log
            .lines()
            .filter_map(|l| l.split_once("engram_trainer: ").map(|(_, summary)| summary.to_owned()))
            .collect(),
        elapsed: started.elapsed(),
    };
    Ok(figures)
}

/// One progress line: the day and the predictor's state.
fn day_line(world: &World, day: u32) -> Result<String> {
    let store = shared::storage::store::Store::open(&world.engram_home().join("engram.db")).map_err(|e| err!("{e}"))?;
    let config =
        shared::base::config::Config::load(&world.engram_home().join("config.toml")).map_err(|e| err!("{e}"))?;
    let state = PredictorState::load(&store, &config.predictor).map_err(|e| err!("{e}"))?;
    Ok(format!("day {day}: {}", state.status_line()))
}
