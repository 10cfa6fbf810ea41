//! Plays a scenario through the real hooks and records what the agent
//! received and what the CLI listed: a [`Trace`], judged by
//! [`super::judge`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use super::script::{Event, Outcome, Step, ToolStep};
use super::{Result, Scenario};
use crate::driver::claude::{Session, ToolUse};
use crate::driver::{Binaries, HookCall, ListedMemory, SETTLE_TIMEOUT, World, err};

/// How to play.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Wait for Engram's background work after every turn (a user takes
    /// seconds between prompts); otherwise only between sessions.
    pub settle_each_turn: bool,
    /// Longest wait for the background work.
    pub settle_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options { settle_each_turn: true, settle_timeout: SETTLE_TIMEOUT }
    }
}

/// One event as played: where, what it needed, what the hooks injected.
#[derive(Clone, Debug)]
pub struct EventTrace {
    /// Position among the events.
    pub index: usize,
    /// Script line.
    pub line: usize,
    /// Session name.
    pub session: String,
    /// The session's project.
    pub project: String,
    /// "session start", "prompt", "tool", "after compaction", "resume".
    pub moment: &'static str,
    /// The lessons it needs (`None`: not labelled).
    pub needs: Option<Vec<String>>,
    /// What the hooks of this event (and the write-side hooks that ran with
    /// it) put into the agent's context, in order.
    pub injected: Vec<String>,
    /// The agent's context window it belongs to: a new one at each session
    /// start and each compaction (a resume goes on with its session's).
    pub window: usize,
    /// The window began with a compaction.
    pub after_compaction: bool,
    /// A short description (the prompt, the command, ...).
    pub what: String,
}

/// What the CLI listed at one point.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Events played before it.
    pub after_events: usize,
    /// What had just happened ("end of session X", "forget pnpm", ...).
    pub when: String,
    /// `memory list` at that point.
    pub memories: Vec<ListedMemory>,
}

/// A `forget` step.
#[derive(Clone, Debug)]
pub struct ForgetTrace {
    /// The lesson.
    pub lesson: String,
    /// Events played before it.
    pub after_events: usize,
    /// Snapshots taken before it.
    pub after_snapshots: usize,
    /// The memories forgotten (those listed that stated the lesson).
    pub forgotten: Vec<ListedMemory>,
}

/// A `plant` step.
#[derive(Clone, Debug)]
pub struct PlantTrace {
    /// The lesson.
    pub lesson: String,
    /// The session it arose in.
    pub session: String,
    /// Events played before it.
    pub after_events: usize,
}

/// One hook process.
#[derive(Clone, Debug)]
pub struct HookTime {
    /// Its event (`SessionStart`, ...).
    pub event: String,
    /// Wall time.
    pub duration: Duration,
}

/// Everything a scenario run observed.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// The scenario.
    pub scenario: String,
    /// Every event, in order.
    pub events: Vec<EventTrace>,
    /// `memory list` after every session and every step between sessions.
    pub snapshots: Vec<Snapshot>,
    /// Forget steps.
    pub forgets: Vec<ForgetTrace>,
    /// Plant steps.
    pub plants: Vec<PlantTrace>,
    /// Every hook run.
    pub hooks: Vec<HookTime>,
    /// What went wrong on the way: a hook that failed, blocked or printed
    /// what a harness rejects; background work that did not settle.
    pub problems: Vec<String>,
    /// Wall time of the whole run.
    pub wall: Duration,
}

struct Played {
    id: String,
    cwd: PathBuf,
    transcript: PathBuf,
    project: String,
    window: usize,
    after_compaction: bool,
}

/// Plays `scenario` in a fresh world.
pub fn run(scenario: &Scenario, bins: &Binaries, opts: Options) -> Result<Trace> {
    let started = Instant::now();
    let world = World::new(bins)?;
    let mut roots = BTreeMap::new();
    for (name, p) in &scenario.projects {
        roots.insert(name.clone(), world.project(&p.spec)?);
    }
    let mut player = Player { world: &world, scenario, opts, trace: Trace::default(), windows: 0 };
    player.trace.scenario = scenario.name.clone();
    let mut played: BTreeMap<String, Played> = BTreeMap::new();
    // The open session: its name, the driver's session, whether it started.
    let mut current: Option<(String, Session<'_>, bool)> = None;
    for line in &scenario.script {
        let at = line.no;
        match &line.step {
            Step::Session { name, project, worktree, subdir } => {
                let root = match worktree {
                    Some(w) => world.code_dir().join(w),
                    None => roots.get(project).ok_or_else(|| err!("unknown project {project}"))?.clone(),
                };
                let cwd = match subdir {
                    Some(s) => root.join(s),
                    None => root,
                };
                std::fs::create_dir_all(&cwd)?;
                let id = session_uuid(&scenario.name, name);
                let session = world.claude_session(&id, &cwd);
                player.windows += 1;
                played.insert(
                    name.clone(),
                    Played {
                        id,
                        cwd,
                        transcript: session.transcript().to_path_buf(),
                        project: project.clone(),
                        window: player.windows,
                        after_compaction: false,
                    },
                );
                current = Some((name.clone(), session, false));
            }
            Step::Resume(name) => {
                let p = played.get(name).ok_or_else(|| err!("line {at}: unknown session {name}"))?;
                current = Some((name.clone(), Session::resume(&world, &p.id, &p.cwd)?, false));
            }
            Step::End(reason) => {
                let (name, mut s, _) = current.take().ok_or_else(|| err!("line {at}: no session"))?;
                let calls = s.end(reason)?;
                player.hooks(&calls);
                player.settle(&format!("end of session {name}"))?;
            }
            Step::Say(text) => {
                let (name, s, started) = current.as_mut().ok_or_else(|| err!("line {at}: no session"))?;
                if !*started {
                    let p = played.get_mut(name.as_str()).ok_or_else(|| err!("line {at}: unknown session"))?;
                    player.event(s, p, name, at, &None, &Event::Start("startup".into()))?;
                    *started = true;
                }
                s.say(text)?;
            }
            Step::Plant(ids) => {
                let (name, _, _) = current.as_ref().ok_or_else(|| err!("line {at}: no session"))?;
                for id in ids {
                    player.trace.plants.push(PlantTrace {
                        lesson: id.clone(),
                        session: name.clone(),
                        after_events: player.trace.events.len(),
                    });
                }
            }
            Step::Forget(lesson) => {
                let l = &scenario.lessons[lesson];
                let stating: Vec<ListedMemory> =
                    world.memories()?.into_iter().filter(|m| l.stated_by(&m.content)).collect();
                for m in &stating {
                    world.run_ok(world.ingestor(&[
                        "memory",
                        "forget",
                        &m.id,
                        "--reason",
                        "the scenario forgets it",
                    ]))?;
                }
                player.trace.forgets.push(ForgetTrace {
                    lesson: lesson.clone(),
                    after_events: player.trace.events.len(),
                    after_snapshots: player.trace.snapshots.len(),
                    forgotten: stating,
                });
                player.snapshot(&format!("forget {lesson}"))?;
            }
            Step::Rescan(name) => {
                let p = played.get(name).ok_or_else(|| err!("line {at}: unknown session {name}"))?;
                let path = p.transcript.to_string_lossy().into_owned();
                world.run_ok(world.ingestor(&["scan", "--path", &path]))?;
                player.settle(&format!("rescan of {name}"))?;
            }
            Step::Replay => {
                world.run_ok(world.ingestor(&["replay"]))?;
                player.snapshot("replay")?;
            }
            Step::CompactTapes => {
                world.run_ok(world.ingestor(&["compact"]))?;
                player.snapshot("compact-tapes")?;
            }
            Step::Event { needs, event } => {
                let (name, s, started) = current.as_mut().ok_or_else(|| err!("line {at}: no session"))?;
                let p = played.get_mut(name.as_str()).ok_or_else(|| err!("line {at}: unknown session"))?;
                if !*started && !matches!(event, Event::Start(_) | Event::Resume) {
                    player.event(s, p, name, at, &None, &Event::Start("startup".into()))?;
                }
                *started = true;
                player.event(s, p, name, at, needs, event)?;
            }
        }
    }
    if let Some((name, mut s, _)) = current.take() {
        let calls = s.end("other")?;
        player.hooks(&calls);
        player.settle(&format!("end of session {name}"))?;
    }
    player.trace.wall = started.elapsed();
    Ok(player.trace)
}

struct Player<'a> {
    world: &'a World,
    scenario: &'a Scenario,
    opts: Options,
    trace: Trace,
    windows: usize,
}

impl Player<'_> {
    /// Plays one event and records it.
    fn event(
        &mut self,
        s: &mut Session<'_>,
        p: &mut Played,
        session: &str,
        line: usize,
        needs: &Option<Vec<String>>,
        event: &Event,
    ) -> Result<()> {
        let mut calls = Vec::new();
        let what = match event {
            Event::Start(source) => {
                calls.extend(s.start(source)?);
                format!("start ({source})")
            }
            Event::Resume => {
                calls.extend(s.start("resume")?);
                "resume".to_owned()
            }
            Event::Prompt(text) => {
                let stop = s.stop()?;
                let stopped = !stop.is_empty();
                calls.extend(stop);
                if stopped && self.opts.settle_each_turn {
                    self.settle_quietly("a turn's end")?;
                }
                calls.extend(s.prompt(text)?);
                format!("> {}", first_line(text))
            }
            Event::Tool(step) => {
                calls.extend(s.tool(&tool_use(step, s.cwd())?)?);
                format!("{} {}", step.name, first_line(&step.arg))
            }
            Event::Compact(trigger) => {
                calls.extend(s.compact(trigger, "The user and the agent worked on the project.")?);
                self.windows += 1;
                p.window = self.windows;
                p.after_compaction = true;
                format!("compact ({trigger})")
            }
        };
        self.hooks(&calls);
        let index = self.trace.events.len();
        self.trace.events.push(EventTrace {
            index,
            line,
            session: session.to_owned(),
            project: p.project.clone(),
            moment: event.moment(),
            needs: needs.clone(),
            injected: calls.iter().filter_map(|c| c.context.clone()).collect(),
            window: p.window,
            after_compaction: p.after_compaction,
            what,
        });
        Ok(())
    }

    fn hooks(&mut self, calls: &[HookCall]) {
        for c in calls {
            self.trace.hooks.push(HookTime { event: c.event.clone(), duration: c.duration });
            if let Some(p) = &c.problem {
                self.trace.problems.push(format!("{} hook: {p}", c.event));
            }
        }
    }

    fn settle_quietly(&mut self, when: &str) -> Result<()> {
        if !self.world.settle(self.opts.settle_timeout) {
            self.trace.problems.push(format!(
                "{}: Engram's background work was still busy {:?} after {when}",
                self.scenario.name, self.opts.settle_timeout
            ));
        }
        Ok(())
    }

    fn settle(&mut self, when: &str) -> Result<()> {
        self.settle_quietly(when)?;
        self.snapshot(when)
    }

    fn snapshot(&mut self, when: &str) -> Result<()> {
        let memories = self.world.memories()?;
        self.trace.snapshots.push(Snapshot { after_events: self.trace.events.len(), when: when.to_owned(), memories });
        Ok(())
    }
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 70 { format!("{}…", l.chars().take(70).collect::<String>()) } else { l.to_owned() }
}

/// A session's id: a UUID derived from the scenario and the session name.
fn session_uuid(scenario: &str, session: &str) -> String {
    let h = blake3::hash(format!("{scenario}\0{session}").as_bytes());
    let hex: String = h.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-4{}-a{}-{}", &hex[..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

/// The driver's tool call for a script's, paths made absolute from `cwd`.
fn tool_use(step: &ToolStep, cwd: &std::path::Path) -> Result<ToolUse> {
    let path = || cwd.join(&step.arg).to_string_lossy().into_owned();
    let output = match &step.outcome {
        Outcome::Ok(t) | Outcome::Fail(_, t) => t.clone(),
        Outcome::Rejected(_) => String::new(),
    };
    let base = match step.name.as_str() {
        "Bash" => {
            let code = match &step.outcome {
                Outcome::Fail(c, _) => *c,
                _ => 0,
            };
            ToolUse::bash(&step.arg, code, &output)
        }
        "Read" => ToolUse::read(&path(), &output),
        "Edit" => {
            let body = step.body.as_deref().unwrap_or("");
            let (old, new) = body.split_once(" => ").ok_or_else(|| err!("@Edit needs 'old => new'"))?;
            ToolUse::edit(&path(), old, new)
        }
        "Write" => ToolUse::write(&path(), step.body.as_deref().unwrap_or(&output)),
        "Grep" => ToolUse::other("Grep", json!({"pattern": step.arg, "output_mode": "content"}), &output),
        "Glob" => ToolUse::other("Glob", json!({"pattern": step.arg}), &output),
        other => {
            let input = serde_json::from_str(&step.arg).map_err(|e| err!("@{other}: the argument is not JSON: {e}"))?;
            ToolUse::other(other, input, &output)
        }
    };
    Ok(match &step.outcome {
        Outcome::Ok(_) => base,
        Outcome::Fail(_, text) if step.name != "Bash" => base.failing(text),
        Outcome::Fail(..) => base,
        Outcome::Rejected(feedback) => {
            base.with_outcome(crate::driver::claude::ToolOutcome::Rejected { feedback: feedback.clone() })
        }
    })
}
