//! The architecture's rules that the compiler does not check: the layers of
//! `shared` (no module uses one of a layer below it in ARCHITECTURE.md's
//! order), the crate graph (the predictor never depends on `shared`, no
//! binary crate on another), and ARCHITECTURE.md itself (short, and naming
//! every module, so the map cannot silently fall behind the code).

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read a source folder") {
            let path = entry.expect("read a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without its comments and its test module: what the
/// layer rule is about is what the library itself uses.
fn library_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The layers of `shared`, from the bottom up.
const LAYERS: &[&str] = &["base", "storage", "domain", "projection"];

#[test]
fn no_module_of_shared_uses_a_layer_above_its_own() {
    let root = workspace().join("shared/src");
    let mut up = Vec::new();
    for path in sources(&root) {
        let rel = path.strip_prefix(&root).expect("under shared/src");
        let Some(own) = rel.iter().next().and_then(|c| c.to_str()) else { continue };
        let Some(level) = LAYERS.iter().position(|l| *l == own) else { continue };
        let code = library_code(&fs::read_to_string(&path).expect("read a source file"));
        for (above, name) in LAYERS.iter().enumerate().skip(level + 1) {
            let needle = format!("crate::{name}::");
            if code.contains(&needle) || code.contains(&format!("crate::{{{name}")) {
                up.push(format!("{} uses {} (layer {above} above {level})", rel.display(), name));
            }
        }
    }
    assert!(up.is_empty(), "arrows up a layer in shared:\n{}", up.join("\n"));
}

/// The `[dependencies]` table of a crate's manifest (not its dev-dependencies).
fn dependencies(krate: &str) -> Vec<String> {
    let manifest = fs::read_to_string(workspace().join(krate).join("Cargo.toml")).expect("read a manifest");
    let mut inside = false;
    let mut names = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            names.push(name.trim().split('.').next().unwrap_or_default().to_string());
        }
    }
    names
}

#[test]
fn the_crate_graph_keeps_its_shape() {
    let predictor = dependencies("predictor");
    assert!(!predictor.iter().any(|d| d == "shared"), "predictor depends on shared: {predictor:?}");
    let binaries = ["ingestor", "scorer", "trainer"];
    for krate in binaries {
        let deps = dependencies(krate);
        assert!(deps.iter().any(|d| d == "shared"), "{krate} should build on shared: {deps:?}");
        for other in binaries.iter().filter(|b| **b != krate) {
            assert!(!deps.iter().any(|d| d == other), "{krate} depends on the binary crate {other}");
        }
    }
}

/// The modules a map names: a crate's top-level modules, and in `shared`,
/// each layer's modules (a folder module's own parts are its `mod.rs`'s
/// business). Test-only modules are left out.
fn modules(krate: &str) -> Vec<String> {
    let root = workspace().join(krate).join("src");
    let depth = if krate == "shared" { 2 } else { 1 };
    let mut names = Vec::new();
    for path in sources(&root) {
        let rel = path.strip_prefix(&root).expect("under src");
        for part in rel.iter().take(depth).filter_map(|c| c.to_str()) {
            let name = part.trim_end_matches(".rs");
            let skip = ["lib", "main", "mod", "tests", "test_util", "bin"];
            if !skip.contains(&name) && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[test]
fn architecture_md_is_short_and_names_every_module() {
    let text = fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let words = text.split_whitespace().count();
    assert!(words < 1200, "ARCHITECTURE.md is a five-minute read: {words} words, keep it under 1200");
    let mut missing = Vec::new();
    for krate in ["shared", "predictor", "ingestor", "scorer", "trainer"] {
        for module in modules(krate) {
            let named = text.contains(&format!("`{module}`"))
                || text.contains(&format!("`{module}/`"))
                || text.contains(&format!("`{module}/"))
                || text.contains(&format!("/{module}`"));
            if !named {
                missing.push(format!("{krate}: {module}"));
            }
        }
    }
    assert!(missing.is_empty(), "modules ARCHITECTURE.md does not name:\n{}", missing.join("\n"));
}
