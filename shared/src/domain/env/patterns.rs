//! The pattern tables of tag detection (seed 001 "Tag Detection"), as data:
//! the built-in tables here, which the user's configuration extends.

use std::collections::BTreeMap;

use crate::base::config::EnvConfig;

/// File names and what they say about a project (seed 001 source C).
const FILE_MARKERS: &[(&str, &[&str])] = &[
    ("package.json", &["nodejs"]),
    ("tsconfig.json", &["typescript"]),
    ("deno.json", &["deno", "typescript"]),
    ("deno.jsonc", &["deno", "typescript"]),
    ("package-lock.json", &["npm"]),
    ("npm-shrinkwrap.json", &["npm"]),
    ("pnpm-lock.yaml", &["pnpm"]),
    ("pnpm-workspace.yaml", &["pnpm", "monorepo"]),
    ("yarn.lock", &["yarn"]),
    ("bun.lockb", &["bun"]),
    ("bun.lock", &["bun"]),
    ("next.config.js", &["nextjs", "react", "frontend"]),
    ("next.config.mjs", &["nextjs", "react", "frontend"]),
    ("next.config.ts", &["nextjs", "react", "frontend"]),
    ("vite.config.js", &["vite", "frontend"]),
    ("vite.config.ts", &["vite", "frontend"]),
    ("jest.config.js", &["jest", "testing"]),
    ("jest.config.ts", &["jest", "testing"]),
    ("vitest.config.ts", &["vitest", "testing"]),
    ("tailwind.config.js", &["tailwind", "frontend"]),
    ("tailwind.config.ts", &["tailwind", "frontend"]),
    ("Cargo.toml", &["rust"]),
    ("pyproject.toml", &["python"]),
    ("setup.py", &["python"]),
    ("setup.cfg", &["python"]),
    ("requirements.txt", &["python"]),
    ("Pipfile", &["python", "pipenv"]),
    ("poetry.lock", &["python", "poetry"]),
    ("uv.lock", &["python", "uv"]),
    ("go.mod", &["go"]),
    ("pom.xml", &["java", "maven"]),
    ("build.gradle", &["java", "gradle"]),
    ("build.gradle.kts", &["kotlin", "gradle"]),
    ("settings.gradle", &["gradle"]),
    ("settings.gradle.kts", &["kotlin", "gradle"]),
    ("Gemfile", &["ruby"]),
    ("composer.json", &["php"]),
    ("mix.exs", &["elixir"]),
    ("Package.swift", &["swift"]),
    ("CMakeLists.txt", &["cmake", "cpp"]),
    ("meson.build", &["meson"]),
    ("flake.nix", &["nix"]),
    ("shell.nix", &["nix"]),
    ("Dockerfile", &["docker"]),
    ("docker-compose.yml", &["docker"]),
    ("docker-compose.yaml", &["docker"]),
    ("compose.yml", &["docker"]),
    ("compose.yaml", &["docker"]),
    ("Makefile.toml", &["cargo-make"]),
    ("pubspec.yaml", &["dart", "flutter"]),
    ("angular.json", &["angular", "frontend"]),
    ("svelte.config.js", &["svelte", "frontend"]),
    ("nuxt.config.ts", &["nuxt", "vue", "frontend"]),
    ("manage.py", &["django", "python", "backend"]),
    ("terraform.tf", &["terraform"]),
    ("main.tf", &["terraform"]),
    ("serverless.yml", &["serverless"]),
    ("Chart.yaml", &["helm", "kubernetes"]),
];

/// Dependency names and what they say (seed 001 source D), across npm,
/// crates.io, PyPI and Go modules.
const DEPENDENCIES: &[(&str, &[&str])] = &[
    // npm
    ("react", &["react", "frontend"]),
    ("react-dom", &["react", "frontend"]),
    ("next", &["nextjs", "react", "frontend"]),
    ("vue", &["vue", "frontend"]),
    ("nuxt", &["nuxt", "vue", "frontend"]),
    ("svelte", &["svelte", "frontend"]),
    ("@sveltejs/kit", &["sveltekit", "svelte", "frontend"]),
    ("@angular/core", &["angular", "frontend"]),
    ("solid-js", &["solid", "frontend"]),
    ("react-native", &["react-native", "react", "mobile"]),
    ("expo", &["expo", "react-native", "mobile"]),
    ("electron", &["electron", "desktop"]),
    ("typescript", &["typescript"]),
    ("express", &["express", "backend"]),
    ("fastify", &["fastify", "backend"]),
    ("koa", &["koa", "backend"]),
    ("@nestjs/core", &["nestjs", "backend"]),
    ("hono", &["hono", "backend"]),
    ("jest", &["jest", "testing"]),
    ("vitest", &["vitest", "testing"]),
    ("mocha", &["mocha", "testing"]),
    ("@playwright/test", &["playwright", "testing"]),
    ("cypress", &["cypress", "testing"]),
    ("@testing-library/react", &["testing", "react"]),
    ("tailwindcss", &["tailwind", "frontend"]),
    ("vite", &["vite", "frontend"]),
    ("webpack", &["webpack"]),
    ("eslint", &["eslint"]),
    ("prisma", &["prisma", "database"]),
    ("@prisma/client", &["prisma", "database"]),
    ("graphql", &["graphql"]),
    ("redux", &["redux", "frontend"]),
    ("@reduxjs/toolkit", &["redux", "frontend"]),
    ("storybook", &["storybook", "frontend"]),
    // crates.io
    ("tokio", &["tokio", "async"]),
    ("async-std", &["async"]),
    ("axum", &["axum", "backend"]),
    ("actix-web", &["actix", "backend"]),
    ("rocket", &["rocket", "backend"]),
    ("warp", &["warp", "backend"]),
    ("bevy", &["bevy", "gamedev"]),
    ("wasm-bindgen", &["wasm"]),
    ("leptos", &["leptos", "wasm", "frontend"]),
    ("yew", &["yew", "wasm", "frontend"]),
    ("tauri", &["tauri", "desktop"]),
    ("diesel", &["diesel", "database"]),
    ("sqlx", &["sqlx", "database"]),
    ("rusqlite", &["sqlite", "database"]),
    ("clap", &["cli"]),
    ("serde", &["serde"]),
    ("nalgebra", &["math"]),
    ("proptest", &["proptest", "testing"]),
    // PyPI
    ("django", &["django", "backend"]),
    ("flask", &["flask", "backend"]),
    ("fastapi", &["fastapi", "backend"]),
    ("pytest", &["pytest", "testing"]),
    ("numpy", &["numpy", "data"]),
    ("pandas", &["pandas", "data"]),
    ("torch", &["pytorch", "ml"]),
    ("tensorflow", &["tensorflow", "ml"]),
    ("scikit-learn", &["sklearn", "ml"]),
    ("jupyter", &["jupyter", "data"]),
    ("sqlalchemy", &["sqlalchemy", "database"]),
    ("pydantic", &["pydantic"]),
    ("celery", &["celery", "backend"]),
    // Go modules
    ("github.com/gin-gonic/gin", &["gin", "backend"]),
    ("github.com/labstack/echo/v4", &["echo", "backend"]),
    ("github.com/gofiber/fiber/v2", &["fiber", "backend"]),
    ("github.com/spf13/cobra", &["cobra", "cli"]),
    ("gorm.io/gorm", &["gorm", "database"]),
    ("github.com/stretchr/testify", &["testify", "testing"]),
];

/// Normalised git remotes (`host/path`) containing the pattern, and what they
/// say (seed 001 source B).
const GIT_REMOTES: &[(&str, &[&str])] = &[
    ("github.com/", &["github"]),
    ("gitlab.com/", &["gitlab"]),
    ("gitlab.", &["gitlab"]),
    ("bitbucket.org/", &["bitbucket"]),
    ("codeberg.org/", &["codeberg"]),
    ("dev.azure.com/", &["azure-devops"]),
    ("git.sr.ht/", &["sourcehut"]),
];

/// Directories whose presence says something (seed 001 source E).
const DIRECTORIES: &[(&str, &[&str])] = &[
    ("packages/", &["monorepo"]),
    ("engines/", &["monorepo", "rails-engines"]),
    ("crates/", &["monorepo"]),
    ("components/", &["frontend"]),
    (".github/workflows/", &["github-actions", "ci"]),
    (".circleci/", &["circleci", "ci"]),
    (".devcontainer/", &["devcontainer"]),
    ("migrations/", &["database"]),
    ("terraform/", &["terraform"]),
    ("k8s/", &["kubernetes"]),
    ("helm/", &["helm", "kubernetes"]),
    ("src-tauri/", &["tauri", "desktop"]),
    ("android/", &["android", "mobile"]),
    ("ios/", &["ios", "mobile"]),
    ("notebooks/", &["jupyter", "data"]),
];

/// The tables detection reads, built-in and from the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patterns {
    /// Working-directory patterns → tags (seed 001 source A).
    pub paths: Vec<(String, Vec<String>)>,
    /// Remote patterns → tags (source B).
    pub git_remotes: Vec<(String, Vec<String>)>,
    /// File name → tags (source C).
    pub file_markers: BTreeMap<String, Vec<String>>,
    /// Dependency name → tags (source D).
    pub dependencies: BTreeMap<String, Vec<String>>,
    /// Directory (relative, `/`-terminated or not) → tags (source E).
    pub directories: Vec<(String, Vec<String>)>,
}

impl Patterns {
    /// The built-in tables (no path patterns: those are the user's own).
    pub fn builtin() -> Patterns {
        let table = |rows: &[(&str, &[&str])]| -> BTreeMap<String, Vec<String>> {
            rows.iter().map(|(k, v)| ((*k).to_owned(), v.iter().map(|t| (*t).to_owned()).collect())).collect()
        };
        let list = |rows: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> { table(rows).into_iter().collect() };
        Patterns {
            paths: Vec::new(),
            git_remotes: list(GIT_REMOTES),
            file_markers: table(FILE_MARKERS),
            dependencies: table(DEPENDENCIES),
            directories: list(DIRECTORIES),
        }
    }

    /// The built-in tables extended by the configuration's `[env]` tables (a
    /// key in both gets the tags of both).
    pub fn with(config: &EnvConfig) -> Patterns {
        let mut p = Patterns::builtin();
        let merge_list = |into: &mut Vec<(String, Vec<String>)>, extra: &BTreeMap<String, Vec<String>>| {
            for (k, tags) in extra {
                let tags = clean_tags(tags);
                match into.iter_mut().find(|(key, _)| key == k) {
                    Some((_, have)) => union(have, tags),
                    None => into.push((k.clone(), tags)),
                }
            }
        };
        merge_list(&mut p.paths, &config.path_patterns);
        merge_list(&mut p.git_remotes, &config.git_remotes);
        merge_list(&mut p.directories, &config.directories);
        for (k, tags) in &config.file_markers {
            union(p.file_markers.entry(k.clone()).or_default(), clean_tags(tags));
        }
        for (k, tags) in &config.dependencies {
            union(p.dependencies.entry(k.clone()).or_default(), clean_tags(tags));
        }
        p
    }
}

fn union(have: &mut Vec<String>, extra: Vec<String>) {
    for t in extra {
        if !have.contains(&t) {
            have.push(t);
        }
    }
}

/// Tags as stored: trimmed, lower-case, non-empty.
pub fn clean_tags(tags: &[String]) -> Vec<String> {
    tags.iter().map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_tools_match_names_and_prefixes() {
        let c = EnvConfig { skip_tools: vec!["Glob".into(), "mcp__github__*".into()], ..EnvConfig::default() };
        assert!(c.skips_tool("Glob") && c.skips_tool("glob"));
        assert!(c.skips_tool("mcp__github__create_issue"));
        assert!(!c.skips_tool("Grep") && !c.skips_tool("mcp__git") && !c.skips_tool("é"));
        assert!(!EnvConfig::default().skips_tool("Glob"));
    }

    #[test]
    fn configured_tables_extend_the_builtin_ones() {
        let c = crate::base::config::Config::parse("[env.file_markers]\nTiltfile = ['tilt']\n").unwrap();
        let p = Patterns::with(&c.env);
        assert_eq!(p.file_markers["Tiltfile"], ["tilt"]);
        assert_eq!(p.file_markers["Cargo.toml"], ["rust"]);
    }
}
