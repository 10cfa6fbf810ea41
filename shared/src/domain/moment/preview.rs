//! What a moment would put in an agent's context, and why, for people
//! (`engram-scorer context`, quickstart) and scripts (`--json`): the same
//! [`answer`] the hooks give, shown without being recorded.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::{Answer, Kind, Moment, answer};
use crate::base::config::Config;
use crate::base::error::Result;
use crate::base::time::Ts;
use crate::domain::injection::SessionContext;
use crate::domain::rank::ServingModel;
use crate::storage::event::EnvDetected;
use crate::storage::store::Store;

/// One candidate of a preview, for `--json` output.
#[derive(Clone, Debug, Serialize)]
pub struct PreviewItem {
    /// Final rank.
    pub rank: u32,
    /// Memory id.
    pub id: String,
    /// Type.
    #[serde(rename = "type")]
    pub memory_type: crate::storage::event::MemoryType,
    /// Text.
    pub text: String,
    /// Injected.
    pub injected: bool,
    /// Why it ranks where it does.
    pub reasons: Vec<String>,
    /// Why it is not injected, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_injected: Option<String>,
    /// Fused score.
    pub score: f32,
    /// Baseline rank.
    pub baseline_rank: u32,
    /// Predictor rank, when a model scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictor_rank: Option<u32>,
}

/// What would be injected, and why, for people and scripts.
#[derive(Clone, Debug, Serialize)]
pub struct Preview {
    /// The trigger.
    pub trigger: String,
    /// The query the rankers saw.
    pub query: String,
    /// The session-start context it was built from, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_context: Option<SessionContext>,
    /// The predictor's status line.
    pub status_line: String,
    /// α used.
    pub alpha: f32,
    /// Candidates in the pool.
    pub candidates: usize,
    /// The best candidates in final order (injected ones and the next few).
    pub items: Vec<PreviewItem>,
    /// The exact text an agent would get.
    pub context: Option<String>,
}

impl Preview {
    /// The preview of `answer`, listing the injected memories and up to
    /// `extra` of the next best. Its text is the answer's whole text (notes
    /// included), exactly what the agent gets.
    pub fn new(answer: &Answer, extra: usize) -> Preview {
        let Some(served) = &answer.served else {
            return Preview {
                trigger: answer.trigger.to_owned(),
                query: answer.query.clone(),
                session_context: answer.session_context.clone(),
                status_line: String::new(),
                alpha: 1.0,
                candidates: 0,
                items: Vec::new(),
                context: answer.context.clone(),
            };
        };
        let mut shown_extra = 0;
        let items = served
            .ranking
            .items
            .iter()
            .zip(&served.verdicts)
            .filter(|(it, _)| {
                if it.injected {
                    return true;
                }
                shown_extra += 1;
                shown_extra <= extra
            })
            .map(|(it, verdict)| PreviewItem {
                rank: it.rank,
                id: it.memory.id.0.clone(),
                memory_type: it.memory.memory_type,
                text: it.memory.content.clone(),
                injected: it.injected,
                reasons: it.reasons.clone(),
                not_injected: verdict.clone(),
                score: it.final_score,
                baseline_rank: it.baseline_rank,
                predictor_rank: it.predictor_rank,
            })
            .collect();
        Preview {
            trigger: answer.trigger.to_owned(),
            query: answer.query.clone(),
            session_context: answer.session_context.clone(),
            status_line: served.ranking.state.status_line(),
            alpha: served.ranking.alpha,
            candidates: served.ranking.items.len(),
            items,
            context: answer.context.clone(),
        }
    }

    /// The preview as text for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let injected = self.items.iter().filter(|i| i.injected).count();
        let _ = writeln!(out, "query ({}):", self.trigger);
        for line in self.query.lines() {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(out, "{}", self.status_line);
        let _ =
            writeln!(out, "\n{injected} memor{} injected, from {} candidates:", plural_y(injected), self.candidates);
        for it in &self.items {
            let mark = if it.injected { "+" } else { " " };
            let _ = writeln!(
                out,
                "{mark} #{:<3} {} [{}] {}",
                it.rank,
                it.id,
                it.memory_type,
                crate::domain::knowledge::preview(&it.text, 110)
            );
            if !it.reasons.is_empty() {
                let _ = writeln!(out, "        why: {}", it.reasons.join("; "));
            }
            if let Some(n) = &it.not_injected {
                let _ = writeln!(out, "        not injected: {n}");
            }
        }
        match &self.context {
            Some(c) => {
                let _ = writeln!(out, "\nthe agent would get ({} characters):\n{c}", c.chars().count());
            }
            None => out.push_str("\nnothing would be injected.\n"),
        }
        out
    }
}

fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

/// The preview of `moment` (nothing is recorded), listing up to `extra`
/// memories beyond those injected.
pub fn preview(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    moment: &Moment<'_>,
    extra: usize,
) -> Result<Preview> {
    let answer = answer(store, config, model, "preview", moment)?;
    Ok(Preview::new(&answer, extra))
}

/// The environment detected for `cwd` with the configured tables.
pub fn environment(config: &Config, cwd: &Path) -> EnvDetected {
    crate::domain::env::detect(cwd, &crate::domain::env::DetectOptions::from_env(&config.env, true))
}

/// What a new session started in `cwd` would get, and why.
pub fn preview_session_start(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    cwd: &Path,
    now: Ts,
    extra: usize,
) -> Result<Preview> {
    let env = environment(config, cwd);
    let cwd_s = cwd.to_string_lossy().into_owned();
    let moment = Moment {
        cwd: Some(&cwd_s),
        env: Some(&env),
        branch: crate::domain::hook::git_branch(cwd),
        ..Moment::new(Kind::SessionStart { restart: None }, now)
    };
    preview(store, config, model, &moment, extra)
}

/// What `prompt` sent in a session in `cwd` would get, and why.
pub fn preview_prompt(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    cwd: &Path,
    prompt: &str,
    now: Ts,
    extra: usize,
) -> Result<Preview> {
    let env = environment(config, cwd);
    let cwd_s = cwd.to_string_lossy().into_owned();
    let moment = Moment { cwd: Some(&cwd_s), env: Some(&env), ..Moment::new(Kind::Prompt(prompt), now) };
    preview(store, config, model, &moment, extra)
}
