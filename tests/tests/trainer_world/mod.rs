//! A simulated Engram world for the trainer's end-to-end tests: a data home,
//! memories, and sessions served through the real ranking pipeline (as the
//! scorer's hooks would: `ranking.served`, the injected context, FTS hits),
//! with transcripts that use the memories they needed, and the real
//! `engram-trainer` binary run on it.
//!
//! The planted pattern: in project `atlas`, morning sessions need two of the
//! eight `deploy` memories and evening sessions two of the eight `billing`
//! ones, while the baseline prefers the fourteen more important generic
//! memories at any hour. A third of the prompts name what they need, which
//! the baseline's BM25 finds. Project `borealis` sessions always name it.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use serde_json::json;
use shared::base::config::Config;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::rank::state::PredictorState;
use shared::domain::rank::{self, RankRequest, Ranking, ServingModel};
use shared::storage::event::*;
use shared::storage::journal::Journal;

/// The `engram-trainer` binary of this test profile, built once per process.
pub fn trainer_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| tests::build_bin("trainer", "engram-trainer"))
}

/// 2026-01-05, a Monday, 00:00 UTC.
pub const START: i64 = 1_767_571_200_000;
pub const MINUTE: i64 = 60_000;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;

/// A small model shape, so that debug-build tests train in seconds.
pub fn small_config() -> ModelConfig {
    ModelConfig { native_dim: 0, dim: 16, value_dim: 8, hash_buckets: 4096, project_slots: 8, ..ModelConfig::default() }
}

/// Deterministic pseudo-random numbers (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `k` distinct indices below `n`.
    pub fn pick(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while out.len() < k {
            let i = self.below(n);
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }
}

/// One simulated memory and what using it looks like.
#[derive(Clone, Debug)]
pub struct Mem {
    pub id: MemoryId,
    pub group: &'static str,
    pub project: &'static str,
    /// The word a prompt uses to name it.
    pub word: String,
    pub path: String,
    pub ident: String,
    pub content: String,
}

const DEPLOY: [&str; 8] = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel"];
const BILLING: [&str; 8] = ["iris", "juniper", "kale", "lotus", "maple", "nettle", "olive", "poppy"];
const GENERIC: [&str; 14] = [
    "quartz", "ruby", "sapphire", "topaz", "umber", "violet", "walnut", "xenon", "yarrow", "zinc", "amber", "basalt",
    "cobalt", "dune",
];
const NORTH: [&str; 10] = ["aurora", "boreal", "caribou", "delta", "esker", "fjord", "glacier", "heron", "ice", "jay"];

fn catalogue() -> Vec<(Mem, f32, i64)> {
    let mut out = Vec::new();
    for w in DEPLOY {
        let path = format!("scripts/deploy_{w}.sh");
        let ident = format!("DEPLOY_{}_READY", w.to_uppercase());
        let content = format!("Morning deploy check: run {path} and confirm {ident} before the standup ({w} stage).");
        out.push((
            Mem {
                id: MemoryId::from(format!("mem_deploy_{w}")),
                group: "deploy",
                project: "atlas",
                word: w.into(),
                path,
                ident,
                content,
            },
            0.4,
            20,
        ));
    }
    for w in BILLING {
        let path = format!("ledger/{w}_invoices.csv");
        let ident = format!("BILLING_{}_RATE", w.to_uppercase());
        let content = format!("Evening billing batch: reconcile {path} using {ident} after close ({w} accounts).");
        out.push((
            Mem {
                id: MemoryId::from(format!("mem_billing_{w}")),
                group: "billing",
                project: "atlas",
                word: w.into(),
                path,
                ident,
                content,
            },
            0.4,
            20,
        ));
    }
    for w in GENERIC {
        let path = format!("docs/{w}_overview.md");
        let ident = format!("{}_DASHBOARD_URL", w.to_uppercase());
        let content = format!("Atlas background: the {w} team keeps {path} and {ident} up to date.");
        out.push((
            Mem {
                id: MemoryId::from(format!("mem_generic_{w}")),
                group: "generic",
                project: "atlas",
                word: w.into(),
                path,
                ident,
                content,
            },
            0.9,
            2,
        ));
    }
    for w in NORTH {
        let path = format!("borealis/{w}_service.rs");
        let ident = format!("{}_RETRY_LIMIT", w.to_uppercase());
        let content = format!("Borealis: the {w} service reads {ident} from {path}.");
        out.push((
            Mem {
                id: MemoryId::from(format!("mem_north_{w}")),
                group: "north",
                project: "borealis",
                word: w.into(),
                path,
                ident,
                content,
            },
            0.6,
            10,
        ));
    }
    out
}

/// What kind of session to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Project atlas at 09:00: needs deploy memories.
    Morning,
    /// Project atlas at 19:00: needs billing memories.
    Evening,
    /// Project borealis at 14:00: names the memory it needs.
    North,
}

/// A data home with a simulated history.
pub struct World {
    pub dir: tempfile::TempDir,
    pub paths: Paths,
    pub journal: Journal,
    pub mems: Vec<Mem>,
    pub rng: Rng,
    pub sessions: u32,
    pub base_weights: PathBuf,
    pub tz: jiff::tz::TimeZone,
    /// The user's work changed: atlas sessions now need the generic memories
    /// (the ones the baseline prefers) at any hour.
    pub drifted: bool,
}

impl World {
    /// A new world with the catalogue of memories, `config` as config.toml and
    /// base weights of `model` shape.
    pub fn new(config: &str, model: ModelConfig, seed: u64) -> World {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path().join("engram"));
        std::fs::create_dir_all(paths.home()).unwrap();
        std::fs::write(paths.config(), config).unwrap();
        Config::load(&paths.config()).unwrap();
        let base_weights = dir.path().join("base.ckpt");
        let base = Checkpoint {
            flags: Flags { pretrained_base: true, fine_tuned: false },
            model: Model::new(model, 7).unwrap(),
            optimizer: None,
            meta: TrainingMeta::default(),
        };
        std::fs::write(&base_weights, checkpoint::encode(&base)).unwrap();
        let mut journal = shared::projection::open(&paths, "sim").unwrap();
        let cat = catalogue();
        let events: Vec<Event> = cat
            .iter()
            .enumerate()
            .map(|(i, (m, importance, age_days))| {
                Event::new(
                    Ts(START - age_days * DAY + i as i64),
                    "sim",
                    None,
                    Body::MemoryAdded(MemoryAdded {
                        memory_id: m.id.clone(),
                        content: m.content.clone(),
                        memory_type: MemoryType::Fact,
                        importance: *importance,
                        project: Some(m.project.into()),
                        tags: vec![m.group.into()],
                        source: "explicit".into(),
                        ..MemoryAdded::default()
                    }),
                )
            })
            .collect();
        journal.append(&events).unwrap();
        World {
            dir,
            paths,
            journal,
            mems: cat.into_iter().map(|(m, _, _)| m).collect(),
            rng: Rng(seed),
            sessions: 0,
            base_weights,
            tz: jiff::tz::TimeZone::UTC,
            drifted: false,
        }
    }

    pub fn config(&self) -> Config {
        Config::load(&self.paths.config()).unwrap()
    }

    /// The `engram-trainer` command in this world.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = tests::isolated(trainer_bin(), self.dir.path());
        c.current_dir(self.dir.path())
            .args(args)
            .env("ENGRAM_HOME", self.paths.home())
            .env("ENGRAM_LOG", "warn")
            .stdin(Stdio::null());
        c
    }

    pub fn trainer(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        tests::success_stdout(args, self.trainer(args))
    }

    /// `engram-trainer run` stamped at the current simulated time, starting
    /// the first model from the world's base weights.
    pub fn run_trainer(&mut self, extra: &[&str]) -> String {
        let now = self.now().0.to_string();
        let base = self.base_weights.display().to_string();
        let mut args = vec!["run", "--now", &now, "--base-weights", &base];
        args.extend_from_slice(extra);
        let out = self.ok(&args);
        self.journal.catch_up().unwrap();
        out
    }

    /// The simulated clock: just after the last session.
    pub fn now(&self) -> Ts {
        Ts(START + i64::from(self.sessions.div_ceil(3)) * DAY + HOUR)
    }

    fn serving_model(&self) -> Option<(Model, u64)> {
        let loaded = shared::storage::models::load_current(&self.paths, None).unwrap()?;
        let version = loaded.checkpoint.meta.model_version;
        Some((loaded.checkpoint.model, version))
    }

    fn append(&mut self, events: Vec<Event>) {
        self.journal.append(&events).unwrap();
    }

    /// Serves a ranking as the hooks would and records it.
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &mut self,
        session: &SessionKey,
        project: &str,
        query: &str,
        trigger: &str,
        now: Ts,
        k: usize,
        require_match: bool,
    ) -> Ranking {
        self.journal.catch_up().unwrap();
        let config = self.config();
        let model = self.serving_model();
        let req = RankRequest {
            query,
            query_embedding: None,
            session: Some(session),
            project: Some(project),
            trigger,
            now,
            tz: &self.tz,
            k,
            budget_chars: config.injection.budget_chars,
            require_match,
            explore_draw: 0.99,
            context_reset_ms: None,
        };
        let r = rank::rank(
            self.journal.store(),
            &config,
            model.as_ref().map(|(m, v)| ServingModel { model: m, version: *v }),
            &req,
        )
        .unwrap();
        let mut events = vec![Event::new(now, "sim", Some(session.clone()), Body::RankingServed(r.served.clone()))];
        let injected: Vec<String> = r.injected().map(|i| i.memory.content.clone()).collect();
        if !injected.is_empty() {
            events.push(Event::new(
                now,
                "sim",
                Some(session.clone()),
                Body::MsgIn(MsgIn {
                    text: format!("{INJECTION_OPEN}\n{}\n{INJECTION_CLOSE}", injected.join("\n")),
                    origin: origin::ENGRAM.into(),
                    ..MsgIn::default()
                }),
            ));
        }
        if trigger == trigger::PROMPT {
            let hits: Vec<MemoryId> = r
                .items
                .iter()
                .filter(|i| i.memory.signals.bm25_score.is_some())
                .take(5)
                .map(|i| i.memory.id.clone())
                .collect();
            if !hits.is_empty() {
                events.push(Event::new(
                    now,
                    "sim",
                    Some(session.clone()),
                    Body::FtsHits(FtsHits { ranking_id: Some(r.ranking_id.clone()), memory_ids: hits }),
                ));
            }
        }
        self.append(events);
        r
    }

    /// Simulates one session of `kind`; returns its key.
    pub fn session(&mut self, kind: Kind) -> SessionKey {
        let n = self.sessions;
        self.sessions += 1;
        let day = i64::from(n / 3);
        let (project, hour, group, count) = match kind {
            Kind::Morning if self.drifted => ("atlas", 9, "generic", 2),
            Kind::Evening if self.drifted => ("atlas", 19, "generic", 2),
            Kind::Morning => ("atlas", 9, "deploy", 2),
            Kind::Evening => ("atlas", 19, "billing", 2),
            Kind::North => ("borealis", 14, "north", 1),
        };
        let t0 = Ts(START + day * DAY + hour * HOUR);
        let key = SessionKey::new("claude", &format!("sim-{n:04}"));
        let pool: Vec<usize> = (0..self.mems.len()).filter(|&i| self.mems[i].group == group).collect();
        let needed: Vec<Mem> =
            self.rng.pick(pool.len(), count).into_iter().map(|i| self.mems[pool[i]].clone()).collect();
        let named = kind == Kind::North || self.rng.below(3) == 0;
        let prompt = if named {
            format!("what about {}?", needed[0].word)
        } else {
            "let's pick up where we left off".to_owned()
        };
        let mut t = t0;
        let mut tick = |minutes: i64| {
            t = Ts(t.0 + minutes * MINUTE);
            t
        };
        let ev = |at: Ts, body: Body| Event::new(at, "sim", Some(key.clone()), body);
        self.append(vec![ev(
            t0,
            Body::SessionStarted(SessionStarted {
                harness: "claude".into(),
                harness_session_id: format!("sim-{n:04}"),
                project: Some(project.into()),
                cwd: Some(format!("/src/{project}")),
                ..SessionStarted::default()
            }),
        )]);
        let context = format!("project {project}, cwd /src/{project}, branch main");
        let start = self.serve(&key, project, &context, trigger::SESSION_START, tick(0), 4, false);
        let at = tick(1);
        self.append(vec![ev(at, Body::MsgIn(MsgIn { text: prompt.clone(), ..MsgIn::default() }))]);
        let at = tick(0);
        let on_prompt = self.serve(&key, project, &prompt, trigger::PROMPT, at, 3, true);
        let injected: Vec<MemoryId> =
            start.injected().chain(on_prompt.injected()).map(|i| i.memory.id.clone()).collect();
        let mut events = Vec::new();
        let mut call = 0;
        let mut tool = |events: &mut Vec<Event>, at: Ts, name: &str, args: serde_json::Value, result: &str| {
            call += 1;
            let id = format!("call{call}");
            events.push(ev(at, Body::ToolCall(ToolCall { tool: name.into(), call_id: id.clone(), args })));
            events.push(ev(
                Ts(at.0 + 500),
                Body::ToolResult(ToolResult {
                    tool: name.into(),
                    call_id: id.clone(),
                    stdout: result.into(),
                    ..ToolResult::default()
                }),
            ));
            id
        };
        for m in &needed {
            if !injected.contains(&m.id) {
                // Not given: the agent has to go and find it.
                tool(
                    &mut events,
                    tick(2),
                    "Bash",
                    json!({"command": format!("grep -rn {group} .")}),
                    &format!("{}:3:{}=0\nREADME.md:1:{group}", m.path, m.ident),
                );
            }
            let call_id = tool(
                &mut events,
                tick(2),
                "Edit",
                json!({"file_path": format!("/src/{project}/{}", m.path), "new_string": format!("{}=1", m.ident)}),
                "ok",
            );
            events.push(ev(
                tick(0),
                Body::CodeEdit(CodeEdit {
                    file: format!("/src/{project}/{}", m.path),
                    call_id: Some(call_id),
                    ..CodeEdit::default()
                }),
            ));
            events.push(ev(
                tick(1),
                Body::MsgOut(MsgOut { text: format!("Set {} in {}.", m.ident, m.path), ..MsgOut::default() }),
            ));
        }
        for i in 0..3 {
            tool(
                &mut events,
                tick(3),
                "Bash",
                json!({"command": format!("cargo test --quiet part{i}")}),
                "test result: ok",
            );
        }
        events.push(ev(tick(1), Body::MsgIn(MsgIn { text: "thanks, that's all".into(), ..MsgIn::default() })));
        events.push(ev(tick(1), Body::MsgOut(MsgOut { text: "You're welcome.".into(), ..MsgOut::default() })));
        events.push(ev(tick(5), Body::SessionEnded(SessionEnded { reason: "prompt_input_exit".into() })));
        self.append(events);
        key
    }

    /// The scheduled kind of session `n`: morning, evening, and every third day a borealis one.
    pub fn kind_of(n: u32) -> Kind {
        match n % 3 {
            0 => Kind::Morning,
            1 => Kind::Evening,
            _ if (n / 3) % 3 == 2 => Kind::North,
            _ => Kind::Morning,
        }
    }

    /// Simulates the next `count` sessions of the schedule.
    pub fn sessions(&mut self, count: u32) {
        for _ in 0..count {
            let kind = World::kind_of(self.sessions);
            self.session(kind);
        }
    }

    /// One SQL value from the projection.
    pub fn query<T: rusqlite::types::FromSql>(&mut self, sql: &str) -> T {
        self.journal.catch_up().unwrap();
        self.journal.store().conn().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    pub fn state(&mut self) -> PredictorState {
        self.journal.catch_up().unwrap();
        PredictorState::load(self.journal.store(), &self.config().predictor).unwrap()
    }

    /// Mean predictor rank of the deploy and of the billing memories at a
    /// session start in `project` at `hour` of the next simulated day, with the
    /// serving model (lower is preferred).
    pub fn predictor_preference(&mut self, project: &str, hour: i64) -> (f32, f32) {
        self.journal.catch_up().unwrap();
        let config = self.config();
        let (model, version) = self.serving_model().unwrap();
        let now = Ts(self.now().0 + DAY - HOUR + hour * HOUR);
        let context = format!("project {project}, cwd /src/{project}, branch main");
        let req = RankRequest {
            query: &context,
            query_embedding: None,
            session: None,
            project: Some(project),
            trigger: trigger::SESSION_START,
            now,
            tz: &self.tz,
            k: 4,
            budget_chars: config.injection.budget_chars,
            require_match: false,
            explore_draw: 0.99,
            context_reset_ms: None,
        };
        let r = rank::rank(self.journal.store(), &config, Some(ServingModel { model: &model, version }), &req).unwrap();
        let mean = |group: &str| {
            let ranks: Vec<f32> = r
                .items
                .iter()
                .filter(|i| i.memory.id.as_str().starts_with(&format!("mem_{group}_")))
                .map(|i| i.predictor_rank.unwrap() as f32)
                .collect();
            ranks.iter().sum::<f32>() / ranks.len() as f32
        };
        (mean("deploy"), mean("billing"))
    }

    /// The hash `models/current` names.
    pub fn current(&self) -> Option<String> {
        shared::storage::models::current_hash(&self.paths).unwrap()
    }
}
