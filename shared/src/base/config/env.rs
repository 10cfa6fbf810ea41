//! The `[env]` section of `config.toml`: the environment model's tag
//! pattern tables and the tools before which nothing is injected.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `[env]` section of `config.toml`: the pattern tables (each added to
/// the built-in one) and the tools before which nothing is injected.
///
/// ```toml
/// [env]
/// skip_tools = ["Glob"]
///
/// [env.path_patterns]           # the working directory contains it (`*` matches anything, `~/` is $HOME)
/// "~/work/acme/" = ["acme"]
///
/// [env.git_remotes]             # the normalised remote (`host/path`) contains it
/// "github.com/acme/" = ["acme"]
///
/// [env.file_markers]            # a file of this name in the working directory or up to the root
/// "Tiltfile" = ["tilt", "kubernetes"]
///
/// [env.dependencies]            # a declared dependency of this name
/// "@acme/picasso" = ["acme", "picasso", "react", "frontend"]
///
/// [env.directories]             # a directory of this relative path
/// "engines/" = ["monorepo", "rails-engines"]
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// Tools before which nothing is injected (PreToolUse), besides Engram's
    /// own and the bookkeeping ones.
    pub skip_tools: Vec<String>,
    /// Working-directory patterns → tags.
    pub path_patterns: BTreeMap<String, Vec<String>>,
    /// Remote patterns → tags.
    pub git_remotes: BTreeMap<String, Vec<String>>,
    /// File name → tags.
    pub file_markers: BTreeMap<String, Vec<String>>,
    /// Dependency name → tags.
    pub dependencies: BTreeMap<String, Vec<String>>,
    /// Relative directory → tags.
    pub directories: BTreeMap<String, Vec<String>>,
}

impl EnvConfig {
    /// Whether `skip_tools` names the tool (seed 000 "PreToolUse"): a name
    /// matches itself, ignoring case; one ending in `*` matches every tool
    /// it begins (`mcp__github__*`).
    pub fn skips_tool(&self, tool: &str) -> bool {
        self.skip_tools.iter().map(|s| s.trim()).any(|s| match s.strip_suffix('*') {
            Some(prefix) => tool.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix)),
            None => s.eq_ignore_ascii_case(tool),
        })
    }
}
