//! Configuration: `config.toml` in the data home, every key with a default in code.
//!
//! A missing file means all defaults. An unknown key or a value of the wrong
//! type is an error naming it, so a typo never silently does nothing.
//!
//! ```toml
//! [predictor]
//! train_interval_sessions = 10
//! exploration_rate = 0.05
//!
//! [privacy]
//! exclude = ["secrets/**"]
//!
//! [extractor]
//! preset = "claude"          # or "codex", or "openai" with base_url, or command = [...]
//! model = "haiku"
//! daily_calls = 200
//! ```
//!
//! Model programs and servers (`*.preset`, `*.model`, `*.base_url`,
//! `*.command`) are set here or on the command line only, never through the
//! web page; see [`crate::base::model`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::command::CommandConfig;
use crate::base::error::{Error, Result};
use crate::base::model::ModelConfig;

pub mod env;
pub mod knowledge;

pub use env::EnvConfig;
pub use knowledge::KnowledgeConfig;

/// All configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Predictor and fusion (seed 002 "Phase 5: Config").
    pub predictor: PredictorConfig,
    /// What is injected into agents.
    pub injection: InjectionConfig,
    /// Privacy: paths never recorded, secrets redacted.
    pub privacy: PrivacyConfig,
    /// Reading harness logs.
    pub scan: ScanConfig,
    /// Optional model extracting memories (off by default; see [`crate::base::model`]).
    pub extractor: ModelConfig,
    /// Optional external continuity judge (off by default).
    pub judge: CommandConfig,
    /// Time zone for session-level signals.
    pub time: TimeConfig,
    /// The environment model: tag pattern tables, tools to skip.
    pub env: EnvConfig,
    /// Seed 004's memory model: graph, conflicts, checkpoints, topic shifts, dedup.
    pub knowledge: KnowledgeConfig,
    /// The local web UI and REST API (`engram-scorer web`).
    pub web: WebConfig,
}

/// Seed 002's exposed predictor parameters, plus training limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PredictorConfig {
    /// Use the learned predictor at all (its ranking is still recorded when off).
    pub enabled: bool,
    /// Retrain after this many newly scored sessions.
    pub train_interval_sessions: u32,
    /// Scored sessions needed before the predictor may influence injection.
    pub min_training_sessions: u32,
    /// The RRF constant k.
    pub rrf_k: f32,
    /// Probability of an exploration slot per ranking.
    pub exploration_rate: f32,
    /// Consecutive low-success sessions that trigger a drift reset.
    pub drift_reset_window: u32,
    /// Hard limit on one training run.
    pub max_training_seconds: u64,
    /// Candidate pool size after pre-filtering.
    pub candidate_pool_size: usize,
    // Unattended learning (issue 16): when the hooks start `engram-trainer run`.
    /// Start `engram-trainer run` from the hooks when it is due (see `auto_train_*`).
    pub auto_train: bool,
    /// Ended sessions not yet labelled before the hooks start a run.
    pub auto_train_min_sessions: u32,
    /// Least time between two runs the hooks start, in minutes.
    pub auto_train_interval_minutes: u64,
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            enabled: true,
            train_interval_sessions: 10,
            min_training_sessions: 10,
            rrf_k: 12.0,
            exploration_rate: 0.05,
            drift_reset_window: 10,
            max_training_seconds: 30,
            candidate_pool_size: 100,
            auto_train: true,
            auto_train_min_sessions: 1,
            auto_train_interval_minutes: 10,
        }
    }
}

/// What is injected into an agent's context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InjectionConfig {
    /// Character budget of one injection (about 2,000 tokens).
    pub budget_chars: usize,
    /// Hard cap (Claude Code truncates hook context beyond 10,000 characters).
    pub max_chars: usize,
    /// Most memories injected at session start.
    pub session_start_k: usize,
    /// Most memories injected for one prompt.
    pub prompt_k: usize,
    /// Most memories injected before one tool call.
    pub tool_k: usize,
    /// What a memory needs to be injected at each moment (trust: abstain floors).
    pub floors: FloorsConfig,
}

impl Default for InjectionConfig {
    fn default() -> Self {
        InjectionConfig {
            budget_chars: 1_500,
            max_chars: 10_000,
            session_start_k: 5,
            prompt_k: 3,
            tool_k: 2,
            floors: FloorsConfig::default(),
        }
    }
}

/// The abstain floors of injection (`shared::domain::injection::gate`), in units of
/// evidence (`shared::domain::injection::evidence`: about one per specific word the
/// moment's text shares with the memory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FloorsConfig {
    /// Evidence a prompt must give.
    pub prompt: f32,
    /// Evidence a tool call must give.
    pub tool: f32,
    /// Evidence a tool that only looks (reads, searches, lists) must give.
    pub tool_read_only: f32,
    /// Evidence the session's context text must give for a memory that is
    /// not one of the project's rules.
    pub session_start: f32,
    /// Importance a memory of the project needs to come at session start
    /// without the session's context text pointing at it.
    pub session_start_importance: f32,
    /// Factor on the floor for a memory learned in another project.
    pub other_project: f32,
}

impl Default for FloorsConfig {
    fn default() -> Self {
        FloorsConfig {
            prompt: 1.5,
            tool: 1.25,
            tool_read_only: 2.5,
            session_start: 3.0,
            session_start_importance: 0.4,
            other_project: 2.0,
        }
    }
}

/// Privacy settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacyConfig {
    /// Extra path patterns (globs) whose contents are never recorded, added to
    /// the built-in ones (`.env`, `*.pem`, `*.key`, credentials, …).
    pub exclude: Vec<String>,
    /// Redact secrets (API keys, tokens, private keys, passwords) before
    /// anything reaches a tape. Turning this off is for debugging only.
    pub redact: bool,
}

impl Default for PrivacyConfig {
    fn default() -> Self {
        PrivacyConfig { exclude: Vec::new(), redact: true }
    }
}

/// Where harness logs are read from (defaults: the harnesses' own locations).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScanConfig {
    /// Claude Code config directory (default `$CLAUDE_CONFIG_DIR` or `~/.claude`).
    pub claude_dir: Option<String>,
    /// Codex home (default `$CODEX_HOME` or `~/.codex`).
    pub codex_home: Option<String>,
    /// Gemini CLI directory (default `~/.gemini`).
    pub gemini_dir: Option<String>,
    /// OpenCode data directory (default `~/.local/share/opencode`).
    pub opencode_dir: Option<String>,
    /// Directories searched for SpecStory exports (`.specstory/history/*.md`
    /// in the repositories below them, a few levels deep), besides the
    /// projects Engram already knows (default none).
    pub specstory_roots: Vec<String>,
    /// A session with no new content for this long is considered ended.
    pub idle_end_minutes: u64,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            claude_dir: None,
            codex_home: None,
            gemini_dir: None,
            opencode_dir: None,
            specstory_roots: Vec::new(),
            idle_end_minutes: 60,
        }
    }
}

/// Time settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeConfig {
    /// `local` (the system time zone) or an IANA name such as `Europe/Paris`.
    pub timezone: String,
}

impl Default for TimeConfig {
    fn default() -> Self {
        TimeConfig { timezone: "local".into() }
    }
}

impl TimeConfig {
    /// The configured time zone (UTC if it cannot be found).
    pub fn zone(&self) -> jiff::tz::TimeZone {
        if self.timezone == "local" {
            return jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
        }
        jiff::tz::TimeZone::get(&self.timezone).unwrap_or_else(|_| {
            tracing::warn!(timezone = %self.timezone, "unknown time zone; using UTC");
            jiff::tz::TimeZone::UTC
        })
    }
}

/// The local web UI and REST API (`engram-scorer web`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Address to listen on: a loopback address unless `allow_remote`.
    pub bind: String,
    /// Port to listen on (0: any free port).
    pub port: u16,
    /// Listen on a non-loopback address (the API then serves anyone who can
    /// reach it and knows a host name below: opt in knowingly).
    pub allow_remote: bool,
    /// Extra `Host` header values accepted (`name:port`), besides the
    /// loopback names and the bound address.
    pub allowed_hosts: Vec<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig { bind: "127.0.0.1".into(), port: 37820, allow_remote: false, allowed_hosts: Vec::new() }
    }
}

impl Config {
    /// Reads `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Config> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(Error::io("read", path, e)),
        }
    }

    /// Parses TOML text.
    pub fn parse(text: &str) -> std::result::Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let p = &self.predictor;
        if !(0.0..=1.0).contains(&p.exploration_rate) {
            return Err(format!("predictor.exploration_rate must be in 0..=1, not {}", p.exploration_rate));
        }
        if !(p.rrf_k.is_finite() && p.rrf_k >= 1.0) {
            return Err(format!("predictor.rrf_k must be at least 1, not {}", p.rrf_k));
        }
        if p.candidate_pool_size == 0 {
            return Err("predictor.candidate_pool_size must be positive".into());
        }
        if self.web.bind.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("web.bind must be an IP address (such as 127.0.0.1), not {:?}", self.web.bind));
        }
        let i = &self.injection;
        if i.budget_chars > i.max_chars {
            return Err(format!(
                "injection.budget_chars ({}) exceeds injection.max_chars ({})",
                i.budget_chars, i.max_chars
            ));
        }
        let f = &i.floors;
        for (name, v) in [
            ("prompt", f.prompt),
            ("tool", f.tool),
            ("tool_read_only", f.tool_read_only),
            ("session_start", f.session_start),
            ("session_start_importance", f.session_start_importance),
            ("other_project", f.other_project),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("injection.floors.{name} must be a number of at least 0, not {v}"));
            }
        }
        self.extractor.validate("extractor")?;
        self.knowledge.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_gives_defaults() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert_eq!(Config::default().predictor.rrf_k, 12.0);
    }

    #[test]
    fn partial_sections_keep_other_defaults() {
        let c =
            Config::parse("[predictor]\nexploration_rate = 0.1\n[extractor]\ncommand = ['llm', '--json']\n").unwrap();
        assert_eq!(c.predictor.exploration_rate, 0.1);
        assert_eq!(c.predictor.train_interval_sessions, 10);
        assert!(c.extractor.enabled());
        assert!(!c.judge.enabled());
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let err = Config::parse("[predictor]\nexploraton_rate = 0.1\n").unwrap_err();
        assert!(err.contains("exploraton_rate"), "{err}");
        let err = Config::parse("[predictor]\nexploration_rate = 2.0\n").unwrap_err();
        assert!(err.contains("exploration_rate"), "{err}");
        let err = Config::parse("[injection]\nbudget_chars = 20000\n").unwrap_err();
        assert!(err.contains("max_chars"), "{err}");
    }

    #[test]
    fn env_tables_parse_and_typos_are_named() {
        let c = Config::parse("[env]\nskip_tools = ['Glob']\n[env.file_markers]\nTiltfile = ['tilt']\n").unwrap();
        assert_eq!(c.env.skip_tools, ["Glob"]);
        assert_eq!(c.env.file_markers["Tiltfile"], ["tilt"]);
        let err = Config::parse("[env]\nskip_tool = ['x']\n").unwrap_err();
        assert!(err.contains("skip_tool"), "{err}");
    }

    #[test]
    fn model_keys_are_checked_where_they_are() {
        let c =
            Config::parse("[extractor]\npreset = 'codex'\n[knowledge.summary]\npreset = 'claude'\nmodel = 'haiku'\n")
                .unwrap();
        assert!(c.extractor.enabled() && c.knowledge.summary.enabled());
        let err =
            Config::parse("[extractor]\npreset = 'openai'\nmodel = 'm'\nbase_url = 'http://192.168.1.9:11434/v1'\n")
                .unwrap_err();
        assert!(err.contains("extractor.base_url") && err.contains("loopback"), "{err}");
        let err =
            Config::parse("[knowledge.dedup]\npreset = 'openai'\nmodel = 'm'\nbase_url = 'http://example.com/v1'\n")
                .unwrap_err();
        assert!(err.contains("knowledge.dedup.base_url"), "{err}");
        let err = Config::parse("[knowledge.curation]\nmodel = 'm'\n").unwrap_err();
        assert!(err.contains("knowledge.curation.model needs knowledge.curation.preset"), "{err}");
        let err = Config::parse("[judge]\npreset = 'claude'\n").unwrap_err();
        assert!(err.contains("preset"), "the judge takes a command only: {err}");
    }

    #[test]
    fn missing_file_is_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(&dir.path().join("none.toml")).unwrap(), Config::default());
    }
}
