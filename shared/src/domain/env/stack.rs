//! Stack detection (seed 004 "Stack Detection"; seed 001 "Tag Detection",
//! sources C and D): the technologies a project uses, read from its marker
//! files and its declared dependencies.
//!
//! Every directory from the working directory up to the project root is
//! looked at, nearest first, so a session in a package of a monorepo sees the
//! package's `package.json` and the repository's `Dockerfile`. Two tables,
//! both data ([`super::patterns`]): file names to tags (`tsconfig.json` →
//! `typescript`, `pnpm-lock.yaml` → `pnpm`), and dependency names to tags
//! (`react` in `package.json` → `react`, `frontend`). Dependencies are read
//! from `package.json` (`dependencies`, `devDependencies`,
//! `peerDependencies`, `optionalDependencies`), `Cargo.toml`
//! (`[dependencies]`, `[dev-dependencies]`, `[workspace.dependencies]`),
//! `pyproject.toml` (PEP 621 and Poetry), `requirements.txt` and `go.mod`.
//! Tags are lower-case, unique and sorted.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::patterns::Patterns;

/// Largest manifest read (a `package.json`, a `Cargo.toml`, …).
const MAX_MANIFEST: u64 = 2 << 20;

/// The stack of the directories `dirs` (nearest first): unique sorted tags.
pub fn detect(dirs: &[PathBuf], patterns: &Patterns) -> Vec<String> {
    let mut tags = BTreeSet::new();
    for dir in dirs {
        let Ok(entries) = fs::read_dir(dir) else { continue };
        for entry in entries.flatten().take(4096) {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(t) = patterns.file_markers.get(name) {
                tags.extend(t.iter().cloned());
            }
            let deps = match name {
                "package.json" => package_json(&entry.path()),
                "Cargo.toml" => cargo_toml(&entry.path()),
                "pyproject.toml" => pyproject_toml(&entry.path()),
                "requirements.txt" => requirements_txt(&entry.path()),
                "go.mod" => go_mod(&entry.path()),
                _ => continue,
            };
            for dep in deps {
                if let Some(t) = patterns.dependencies.get(dep.as_str()) {
                    tags.extend(t.iter().cloned());
                }
            }
        }
    }
    tags.into_iter().collect()
}

fn read_manifest(path: &Path) -> Option<String> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST {
        return None;
    }
    fs::read_to_string(path).ok()
}

/// Dependency names of a `package.json`.
fn package_json(path: &Path) -> Vec<String> {
    let Some(v) = read_manifest(path).and_then(|t| serde_json::from_str::<Value>(&t).ok()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for section in ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] {
        if let Some(Value::Object(map)) = v.get(section) {
            out.extend(map.keys().cloned());
        }
    }
    out
}

/// Dependency names of a `Cargo.toml` (crate names as written).
fn cargo_toml(path: &Path) -> Vec<String> {
    let Some(v) = read_manifest(path).and_then(|t| toml::from_str::<toml::Table>(&t).ok()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut take = |t: Option<&toml::Value>| {
        if let Some(toml::Value::Table(deps)) = t {
            out.extend(deps.keys().cloned());
        }
    };
    take(v.get("dependencies"));
    take(v.get("dev-dependencies"));
    take(v.get("build-dependencies"));
    take(v.get("workspace").and_then(|w| w.get("dependencies")));
    out
}

/// Dependency names of a `pyproject.toml` (PEP 621 and Poetry).
fn pyproject_toml(path: &Path) -> Vec<String> {
    let Some(v) = read_manifest(path).and_then(|t| toml::from_str::<toml::Table>(&t).ok()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let project = v.get("project");
    if let Some(toml::Value::Array(deps)) = project.and_then(|p| p.get("dependencies")) {
        out.extend(deps.iter().filter_map(toml::Value::as_str).filter_map(requirement_name));
    }
    if let Some(toml::Value::Table(groups)) = project.and_then(|p| p.get("optional-dependencies")) {
        for deps in groups.values() {
            if let toml::Value::Array(deps) = deps {
                out.extend(deps.iter().filter_map(toml::Value::as_str).filter_map(requirement_name));
            }
        }
    }
    if let Some(toml::Value::Table(groups)) = v.get("dependency-groups") {
        for deps in groups.values() {
            if let toml::Value::Array(deps) = deps {
                out.extend(deps.iter().filter_map(toml::Value::as_str).filter_map(requirement_name));
            }
        }
    }
    let poetry = v.get("tool").and_then(|t| t.get("poetry"));
    for section in ["dependencies", "dev-dependencies"] {
        if let Some(toml::Value::Table(deps)) = poetry.and_then(|p| p.get(section)) {
            out.extend(deps.keys().map(|k| k.to_ascii_lowercase()));
        }
    }
    out
}

/// Dependency names of a `requirements.txt`.
fn requirements_txt(path: &Path) -> Vec<String> {
    read_manifest(path)
        .map(|t| t.lines().map(str::trim).filter(|l| !l.starts_with('-')).filter_map(requirement_name).collect())
        .unwrap_or_default()
}

/// The distribution name of a PEP 508 requirement (`Django>=4; python_version…`
/// → `django`), lower-case.
fn requirement_name(req: &str) -> Option<String> {
    let req = req.split('#').next()?.trim();
    let end = req.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')).unwrap_or(req.len());
    let name = &req[..end];
    (!name.is_empty()).then(|| name.to_ascii_lowercase().replace('_', "-"))
}

/// Module paths required by a `go.mod`.
fn go_mod(path: &Path) -> Vec<String> {
    let Some(text) = read_manifest(path) else { return Vec::new() };
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if in_block {
            if line.starts_with(')') {
                in_block = false;
            } else if let Some(m) = line.split_whitespace().next() {
                out.push(m.to_owned());
            }
        } else if let Some(rest) = line.strip_prefix("require") {
            let rest = rest.trim();
            if rest.starts_with('(') {
                in_block = true;
            } else if let Some(m) = rest.split_whitespace().next() {
                out.push(m.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn stack(dirs: &[PathBuf]) -> Vec<String> {
        detect(dirs, &Patterns::builtin())
    }

    #[test]
    fn node_react_typescript_with_its_package_manager() {
        let t = tempfile::tempdir().unwrap();
        let app = t.path().join("app");
        write(
            &app.join("package.json"),
            r#"{"dependencies":{"react":"^18","react-dom":"^18"},"devDependencies":{"typescript":"5","vitest":"1"}}"#,
        );
        write(&app.join("pnpm-lock.yaml"), "lockfileVersion: 9\n");
        write(&app.join("tsconfig.json"), "{}");
        let got = stack(std::slice::from_ref(&app));
        for want in ["frontend", "nodejs", "pnpm", "react", "testing", "typescript", "vitest"] {
            assert!(got.contains(&want.to_owned()), "{want} missing from {got:?}");
        }
        assert!(!got.contains(&"npm".to_owned()));
        let mut sorted = got.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(got, sorted);
    }

    #[test]
    fn rust_python_go_and_docker_from_their_files() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("r");
        write(&r.join("Cargo.toml"), "[package]\nname='x'\n[dependencies]\ntokio = { version = '1' }\naxum = '0.7'\n");
        write(&r.join("Dockerfile"), "FROM rust\n");
        let got = stack(std::slice::from_ref(&r));
        for want in ["axum", "backend", "docker", "rust", "tokio"] {
            assert!(got.contains(&want.to_owned()), "{want} missing from {got:?}");
        }
        let p = t.path().join("p");
        write(
            &p.join("pyproject.toml"),
            "[project]\nname='x'\ndependencies=['Django>=4.2', 'pytest ; extra == \"t\"']\n",
        );
        write(&p.join("uv.lock"), "");
        let got = stack(std::slice::from_ref(&p));
        for want in ["backend", "django", "pytest", "python", "uv"] {
            assert!(got.contains(&want.to_owned()), "{want} missing from {got:?}");
        }
        let g = t.path().join("g");
        write(&g.join("go.mod"), "module x\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1 // indirect\n)\n");
        let got = stack(std::slice::from_ref(&g));
        assert!(got.contains(&"go".to_owned()) && got.contains(&"gin".to_owned()), "{got:?}");
        let j = t.path().join("j");
        write(&j.join("pom.xml"), "<project/>");
        write(&j.join("build.gradle"), "");
        let got = stack(std::slice::from_ref(&j));
        assert!(got.contains(&"java".to_owned()) && got.contains(&"maven".to_owned()), "{got:?}");
    }

    #[test]
    fn every_directory_up_to_the_root_counts_and_bad_manifests_do_not_fail() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("mono");
        write(&root.join("docker-compose.yml"), "services: {}\n");
        write(&root.join("web/package.json"), "{ not json");
        write(&root.join("web/yarn.lock"), "");
        let got = stack(&[root.join("web"), root.clone()]);
        assert_eq!(got, vec!["docker", "nodejs", "yarn"]);
        assert!(stack(&[t.path().join("missing")]).is_empty());
    }

    #[test]
    fn requirement_names() {
        assert_eq!(requirement_name("Flask_SQLAlchemy[async]>=3").as_deref(), Some("flask-sqlalchemy"));
        assert_eq!(requirement_name("  # comment"), None);
        assert_eq!(requirement_name("numpy==1.26 ; python_version<'3.13'").as_deref(), Some("numpy"));
    }
}
