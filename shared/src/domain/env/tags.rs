//! Tag detection (seed 000 "Environment Detection", seed 001 "Tag
//! Detection"): the five sources, merged into unique sorted tags, and the
//! rest of the environment seed 001's `detect_environment` returns (`os`,
//! `mcp_servers`).
//!
//! | source | looks at | table |
//! |---|---|---|
//! | A. path | the working directory (`*` matches anything, `~/` is `$HOME`) | [`Patterns::paths`] |
//! | B. git remote | the normalised remote, `host/path` | [`Patterns::git_remotes`] |
//! | C. files | file names in each directory from the cwd up to the root | [`Patterns::file_markers`] |
//! | D. dependencies | the manifests among those files | [`Patterns::dependencies`] |
//! | E. structure | relative directories under each of those directories | [`Patterns::directories`] |
//!
//! C and D are the stack ([`super::stack`]). MCP servers come from the
//! project's `.mcp.json`, Claude Code's `~/.claude.json` (global and for this
//! project) and Codex's `config.toml`, each read only when small enough.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::patterns::Patterns;
use super::project::ProjectIdentity;

/// Largest settings file read for MCP servers.
const MAX_SETTINGS: u64 = 8 << 20;

/// Tags of sources A, B and E for `id` (C and D are [`super::stack::detect`]).
pub fn detect(id: &ProjectIdentity, home: Option<&Path>, patterns: &Patterns) -> BTreeSet<String> {
    let mut tags = BTreeSet::new();
    let cwd = id.cwd.to_string_lossy();
    for (pattern, t) in &patterns.paths {
        if path_matches(&cwd, pattern, home) {
            tags.extend(t.iter().cloned());
        }
    }
    if let Some(remote) = &id.remote {
        for (pattern, t) in &patterns.git_remotes {
            if remote.contains(pattern.as_str()) {
                tags.extend(t.iter().cloned());
            }
        }
    }
    for dir in &id.dirs {
        for (rel, t) in &patterns.directories {
            let rel = rel.trim_matches('/');
            if !rel.is_empty() && dir.join(rel).is_dir() {
                tags.extend(t.iter().cloned());
            }
        }
    }
    tags
}

/// Whether `path` contains `pattern`, where `*` in the pattern matches any
/// run of characters and a leading `~/` stands for `home`.
pub fn path_matches(path: &str, pattern: &str, home: Option<&Path>) -> bool {
    let expanded;
    let pattern = match (pattern.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => {
            expanded = format!("{}/{rest}", h.to_string_lossy().trim_end_matches('/'));
            expanded.as_str()
        }
        _ => pattern,
    };
    let parts: Vec<&str> = pattern.split('*').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return false;
    }
    // A path ending where a pattern's directory ends (`/work/acme` for
    // `/work/acme/`) is inside it too.
    let with_slash = format!("{}/", path.trim_end_matches('/'));
    let mut rest = with_slash.as_str();
    for part in parts {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// The operating system, as seed 001 names it (`platform.system().lower()`).
pub fn os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    }
}

/// MCP servers configured for a session in `cwd` under project `root`
/// (`codex_home`: Codex's directory, when not `~/.codex`).
pub fn mcp_servers(cwd: &Path, root: &Path, home: Option<&Path>, codex_home: Option<&Path>) -> Vec<String> {
    let mut out = BTreeSet::new();
    let keys = |v: Option<&Value>, out: &mut BTreeSet<String>| {
        if let Some(Value::Object(map)) = v {
            out.extend(map.keys().cloned());
        }
    };
    if let Some(v) = read_json(&root.join(".mcp.json")) {
        keys(v.get("mcpServers"), &mut out);
    }
    if let Some(v) = home.and_then(|h| read_json(&h.join(".claude.json"))) {
        keys(v.get("mcpServers"), &mut out);
        for dir in [cwd, root] {
            keys(
                v.get("projects").and_then(|p| p.get(dir.to_string_lossy().as_ref())).and_then(|p| p.get("mcpServers")),
                &mut out,
            );
        }
    }
    let codex = codex_home.map(Path::to_path_buf).or_else(|| home.map(|h| h.join(".codex")));
    if let Some(t) =
        codex.and_then(|c| read_small(&c.join("config.toml"))).and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        && let Some(toml::Value::Table(servers)) = t.get("mcp_servers")
    {
        out.extend(servers.keys().cloned());
    }
    out.into_iter().collect()
}

fn read_small(path: &Path) -> Option<String> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SETTINGS {
        return None;
    }
    fs::read_to_string(path).ok()
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&read_small(path)?).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::domain::env::project::identify;

    #[test]
    fn path_patterns() {
        let home = Path::new("/home/me");
        assert!(path_matches("/work/acme/app", "/work/acme/", None));
        assert!(path_matches("/work/acme", "/work/acme/", None));
        assert!(!path_matches("/work/acmex/app", "/work/acme/", None));
        assert!(path_matches("/home/me/work/acme/x", "~/work/acme/*", Some(home)));
        assert!(path_matches("/srv/clients/acme/web", "/clients/*/web", None));
        assert!(!path_matches("/srv/web/clients", "/clients/*/web", None));
        assert!(!path_matches("/anything", "*", None));
    }

    #[test]
    fn remote_path_and_structure_tags_from_real_folders() {
        let t = tempfile::tempdir().unwrap();
        let app = t.path().join("work/acme/app-repo");
        fs::create_dir_all(app.join(".git")).unwrap();
        fs::write(app.join(".git/config"), "[remote \"origin\"]\n\turl = git@github.com:acme/app-repo.git\n").unwrap();
        fs::create_dir_all(app.join("packages/ui/components")).unwrap();
        fs::create_dir_all(app.join(".github/workflows")).unwrap();
        let mut patterns = Patterns::builtin();
        patterns.paths.push(("/work/acme/".into(), vec!["acme".into()]));
        patterns.git_remotes.push(("github.com/acme/".into(), vec!["acme".into()]));
        let id = identify(&app.join("packages/ui"), None);
        let got: Vec<String> = detect(&id, None, &patterns).into_iter().collect();
        assert_eq!(got, vec!["acme", "ci", "frontend", "github", "github-actions", "monorepo"]);
    }

    #[test]
    fn mcp_servers_from_the_project_and_the_user() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let root = t.path().join("proj");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        fs::write(root.join(".mcp.json"), r#"{"mcpServers":{"postgres":{"command":"pg"}}}"#).unwrap();
        let claude = serde_json::json!({
            "mcpServers": {"engram": {}},
            "projects": {root.to_str().unwrap(): {"mcpServers": {"github": {}}}},
        });
        fs::write(home.join(".claude.json"), claude.to_string()).unwrap();
        let codex = t.path().join("codex");
        fs::create_dir_all(&codex).unwrap();
        fs::write(codex.join("config.toml"), "[mcp_servers.docs]\ncommand = 'd'\n").unwrap();
        assert_eq!(mcp_servers(&root, &root, Some(&home), Some(&codex)), vec!["docs", "engram", "github", "postgres"]);
        assert!(mcp_servers(&home, &home, None, None).is_empty());
    }
}
