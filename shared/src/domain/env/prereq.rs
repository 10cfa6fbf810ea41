//! Prerequisites of a memory (seed 000 "Prerequisites"): where it applies.
//!
//! Stored in `memories.prerequisites` as JSON, e.g.
//! `{"tags": ["frontend", "react"], "repos": ["app-repo"], "os": ["darwin"]}`.
//!
//! - **Structural** ones (`os`, `repos`, `paths`, `mcp_servers`) are physical
//!   constraints and hard-gate: a memory whose structural prerequisites the
//!   environment does not meet is never injected ([`Prerequisites::structural_ok`]).
//!   `os`: any of them is the environment's; `repos`: any of them is the
//!   project's key or name; `paths`: the working directory is one of them or
//!   below it (`~/` is `$HOME`); `mcp_servers`: every one is configured.
//! - **Tags** do not gate. Tag affinity and tag relevance weigh them
//!   ([`super::rank`]); a pin whose tag prerequisite the environment lacks is
//!   not a pin there (the memory competes like any other).

use std::path::Path;

use crate::storage::event::{EnvDetected, Prerequisites};

impl Prerequisites {
    /// Whether `env` meets the structural prerequisites (see the module docs).
    pub fn structural_ok(&self, env: &EnvDetected, home: Option<&Path>) -> bool {
        let os_ok = self.os.is_empty() || env.os.as_deref().is_some_and(|o| self.os.iter().any(|w| same_os(w, o)));
        let repo_ok = self.repos.is_empty() || self.repos.iter().any(|r| *r == env.project || *r == env.name);
        let path_ok = self.paths.is_empty() || self.paths.iter().any(|p| inside(&env.cwd, p, home));
        let mcp_ok = self.mcp_servers.iter().all(|s| env.mcp_servers.contains(s));
        os_ok && repo_ok && path_ok && mcp_ok
    }

    /// Whether every tag prerequisite is among `tags` (sorted).
    pub fn tags_met(&self, tags: &[String]) -> bool {
        self.tags.iter().all(|t| tags.binary_search(t).is_ok())
    }
}

fn same_os(wanted: &str, os: &str) -> bool {
    let norm = |s: &str| match s.to_ascii_lowercase().as_str() {
        "macos" | "mac" | "osx" => "darwin".to_owned(),
        other => other.to_owned(),
    };
    norm(wanted) == norm(os)
}

/// `cwd` is `dir` or below it (component-wise).
fn inside(cwd: &str, dir: &str, home: Option<&Path>) -> bool {
    let dir = match (dir.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => Path::new(dir).to_path_buf(),
    };
    Path::new(cwd).starts_with(&dir)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env() -> EnvDetected {
        EnvDetected {
            cwd: "/home/me/work/app/src".into(),
            project: "github.com/acme/app".into(),
            name: "app".into(),
            os: Some("darwin".into()),
            mcp_servers: vec!["github".into(), "postgres".into()],
            tags: vec!["react".into(), "typescript".into()],
            ..Default::default()
        }
    }

    #[test]
    fn structural_prerequisites_gate() {
        let home = Path::new("/home/me");
        let p = |json: &str| Prerequisites::parse(Some(json));
        let e = env();
        assert!(p("{}").structural_ok(&e, None));
        assert!(p(r#"{"os":["macos","linux"]}"#).structural_ok(&e, None));
        assert!(!p(r#"{"os":["linux"]}"#).structural_ok(&e, None));
        assert!(p(r#"{"repos":["app"]}"#).structural_ok(&e, None));
        assert!(p(r#"{"repos":["github.com/acme/app"]}"#).structural_ok(&e, None));
        assert!(!p(r#"{"repos":["api"]}"#).structural_ok(&e, None));
        assert!(p(r#"{"paths":["~/work/app"]}"#).structural_ok(&e, Some(home)));
        assert!(!p(r#"{"paths":["/home/me/work/ap"]}"#).structural_ok(&e, Some(home)));
        assert!(p(r#"{"mcp_servers":["github"]}"#).structural_ok(&e, None));
        assert!(!p(r#"{"mcp_servers":["github","slack"]}"#).structural_ok(&e, None));
        // Tags never gate structurally.
        assert!(p(r#"{"tags":["rust"]}"#).structural_ok(&e, None));
        assert!(!p(r#"{"tags":["rust"]}"#).tags_met(&e.tags));
        assert!(p(r#"{"tags":["react"]}"#).tags_met(&e.tags));
        assert_eq!(p("not json"), Prerequisites::default());
        assert_eq!(p(r#"{"tags":["a"],"auto":true}"#).to_json().as_deref(), Some(r#"{"tags":["a"]}"#));
    }
}
