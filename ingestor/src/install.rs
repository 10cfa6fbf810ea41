//! `engram-ingestor install claude|codex [--project DIR] [--dry-run]` and
//! `uninstall`: wiring Engram's hooks and MCP server into a harness's
//! settings, and taking them out again.
//!
//! | harness | scope | hooks | MCP server |
//! |---|---|---|---|
//! | Claude Code | user | `$CLAUDE_CONFIG_DIR` (else `~/.claude`) `/settings.json` | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`) `mcpServers.engram` |
//! | Claude Code | `--project DIR` | `DIR/.claude/settings.json` | `DIR/.mcp.json` `mcpServers.engram` |
//! | Codex | user | `$CODEX_HOME` (else `~/.codex`) `/hooks.json` | `$CODEX_HOME/config.toml` `[mcp_servers.engram]`, with `[features] codex_hooks = true` |
//! | Codex | `--project DIR` | `DIR/.codex/hooks.json` | `DIR/.codex/config.toml` |
//!
//! **Hooks.** One matcher group per event, holding one command handler with
//! the absolute path of the installed binary: `SessionStart`,
//! `UserPromptSubmit`, `PreToolUse` → `engram-scorer hook …` (injection);
//! `PostToolUse`, `Stop`, `SessionEnd`, `PreCompact` → `engram-ingestor hook
//! …` (recording). A group is Engram's when every handler in it runs
//! `engram-scorer hook` or `engram-ingestor hook`; nothing else is ever
//! modified or removed.
//!
//! **Merging.** JSON files are read into an order-preserving tree and written
//! back with the file's own indentation, so only what Engram adds changes;
//! `config.toml` is edited as text (comments and layout kept): a marked block
//! for `[mcp_servers.engram]`, and `codex_hooks = true` under an existing
//! `[features]` table or in a new one, each line tagged `# added by engram`.
//! The result is parsed back to check it. A user's own `engram` MCP server is
//! left alone (with a warning). Installing twice changes nothing.
//!
//! **Plugin** (Claude Code, unless `--no-plugin`): the hooks file also gets
//! `extraKnownMarketplaces.engram` (a `directory` source in the data home,
//! where install writes the marketplace with the plugin of seed 004's
//! skills, see [`crate::plugin`]) and `enabledPlugins["engram@engram"]`.
//!
//! **Uninstall** removes exactly what install added. Install keeps, in the
//! data home (`install/<harness>-<scope>.json`), each file's bytes before the
//! first change and a hash of what it wrote: if the file is still exactly
//! what install wrote, the original bytes are put back (a file install
//! created is deleted); if it was edited since, only Engram's entries are
//! taken out. Both print what they change; `--dry-run` changes nothing.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use shared::base::paths::Paths;

/// Which harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
}

impl Target {
    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Claude => "claude",
            Target::Codex => "codex",
        }
    }

    /// From the lower-case name.
    pub fn from_name(s: &str) -> Option<Target> {
        match s {
            "claude" | "claude-code" => Some(Target::Claude),
            "codex" => Some(Target::Codex),
            _ => None,
        }
    }
}

/// Where a harness keeps its settings (from the environment by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HarnessDirs {
    /// Claude Code's configuration directory.
    pub claude_dir: PathBuf,
    /// Claude Code's user state file holding user-scope MCP servers.
    pub claude_json: PathBuf,
    /// Codex's home.
    pub codex_home: PathBuf,
}

impl HarnessDirs {
    /// From `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and `HOME`.
    pub fn from_env() -> Result<HarnessDirs, Error> {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME").ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))?;
        let (claude_dir, claude_json) = match var("CLAUDE_CONFIG_DIR") {
            Some(d) => (d.clone(), d.join(".claude.json")),
            None => (home.join(".claude"), home.join(".claude.json")),
        };
        let codex_home = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
        Ok(HarnessDirs { claude_dir, claude_json, codex_home })
    }
}

/// What to install.
#[derive(Clone, Debug)]
pub struct InstallOptions {
    /// The harness.
    pub target: Target,
    /// Project scope: this directory instead of the user's settings.
    pub project: Option<PathBuf>,
    /// Say what would change, change nothing.
    pub dry_run: bool,
    /// Directory holding `engram-scorer` and `engram-ingestor`.
    pub bin_dir: PathBuf,
    /// `ENGRAM_HOME` to pass to the hooks and the server, if the user set one.
    pub engram_home: Option<PathBuf>,
    /// Where the harness keeps its settings.
    pub dirs: HarnessDirs,
    /// Claude Code: also add the plugin with seed 004's skills (see [`crate::plugin`]).
    pub plugin: bool,
}

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Created.
    Created,
    /// Changed.
    Modified,
    /// Already as wanted.
    Unchanged,
    /// Put back byte for byte.
    Restored,
    /// Deleted (install had created it).
    Deleted,
}

/// One file's change.
#[derive(Clone, Debug, Serialize)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// What happened (or would, with `--dry-run`).
    pub status: FileStatus,
    /// `+ …` / `- …` lines naming each entry added or removed.
    pub items: Vec<String>,
}

/// What `install` or `uninstall` did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Nothing was written.
    pub dry_run: bool,
    /// Per file.
    pub files: Vec<FileChange>,
    /// Things left alone and why.
    pub warnings: Vec<String>,
    /// The trainer's timer (`--schedule`; see [`crate::schedule`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::Change>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.files {
            let (mark, word) = match c.status {
                FileStatus::Created => ("A", "created"),
                FileStatus::Modified => ("M", "modified"),
                FileStatus::Unchanged => ("=", "unchanged"),
                FileStatus::Restored => ("R", "restored to its bytes before install"),
                FileStatus::Deleted => ("D", "deleted (install created it)"),
            };
            let would = if self.dry_run && c.status != FileStatus::Unchanged { " (dry run: not written)" } else { "" };
            writeln!(f, "{mark} {} — {word}{would}", c.path.display())?;
            for item in &c.items {
                writeln!(f, "    {item}")?;
            }
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        if let Some(s) = &self.schedule {
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// An order-preserving JSON tree
// ---------------------------------------------------------------------------

/// JSON with object keys kept in file order (serde_json's map sorts them).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// null
    Null,
    /// true / false
    Bool(bool),
    /// A number, as serde_json read it.
    Num(serde_json::Number),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(m) => m.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The object under `key`, created (at the end) if missing. `None` if
    /// `self` is not an object or the value is not one.
    fn object_at(&mut self, key: &str) -> Option<&mut Json> {
        let Json::Obj(m) = self else { return None };
        if !m.iter().any(|(k, _)| k == key) {
            m.push((key.to_owned(), Json::Obj(Vec::new())));
        }
        m.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v).filter(|v| matches!(v, Json::Obj(_)))
    }

    fn remove(&mut self, key: &str) -> Option<Json> {
        let Json::Obj(m) = self else { return None };
        let i = m.iter().position(|(k, _)| k == key)?;
        Some(m.remove(i).1)
    }

    fn is_empty_container(&self) -> bool {
        matches!(self, Json::Obj(m) if m.is_empty()) || matches!(self, Json::Arr(a) if a.is_empty())
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n).map(Json::Num).ok_or_else(|| E::custom("not a finite number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::Str(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::Str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut v: Vec<(String, Json)> = Vec::new();
                while let Some((k, x)) = map.next_entry::<String, Json>()? {
                    match v.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = x,
                        None => v.push((k, x)),
                    }
                }
                Ok(Json::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Num(n) => n.serialize(s),
            Json::Str(x) => s.serialize_str(x),
            Json::Arr(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for x in a {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Json::Obj(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// A JSON document with the layout it will be written back in.
struct JsonDoc {
    root: Json,
    indent: Vec<u8>,
    trailing_newline: bool,
}

impl JsonDoc {
    fn parse(path: &Path, text: Option<&str>) -> Result<JsonDoc, Error> {
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            return Ok(JsonDoc { root: Json::Obj(Vec::new()), indent: b"  ".to_vec(), trailing_newline: true });
        };
        let root: Json = serde_json::from_str(text).map_err(|e| {
            Error::InvalidArgument(format!(
                "{} is not valid JSON ({e}); fix it, then run install again",
                path.display()
            ))
        })?;
        if !matches!(root, Json::Obj(_)) {
            return Err(Error::InvalidArgument(format!("{} does not hold a JSON object", path.display())));
        }
        let indent = text
            .lines()
            .skip(1)
            .find(|l| l.starts_with([' ', '\t']))
            .map(|l| l.bytes().take_while(|b| *b == b' ' || *b == b'\t').collect())
            .unwrap_or_else(|| b"  ".to_vec());
        Ok(JsonDoc { root, indent, trailing_newline: text.ends_with('\n') })
    }

    fn render(&self) -> String {
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(&self.indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        // Serialising this tree into a Vec cannot fail.
        let _ = self.root.serialize(&mut ser);
        let mut text = String::from_utf8(out).unwrap_or_default();
        if self.trailing_newline {
            text.push('\n');
        }
        text
    }
}

// ---------------------------------------------------------------------------
// What Engram adds
// ---------------------------------------------------------------------------

/// One hook Engram installs.
struct HookSpec {
    event: &'static str,
    matcher: Option<&'static str>,
    command: String,
    timeout: u64,
}

fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%".contains(&b)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Whether a hook command is one of Engram's.
fn is_engram_command(cmd: &str) -> bool {
    (cmd.contains("engram-scorer") || cmd.contains("engram-ingestor")) && cmd.contains(" hook ")
}

fn binaries(opts: &InstallOptions) -> Result<(PathBuf, PathBuf), Error> {
    let find = |name: &str| -> Result<PathBuf, Error> {
        let p = opts.bin_dir.join(name);
        if p.is_file() {
            Ok(std::path::absolute(&p).unwrap_or(p))
        } else {
            Err(Error::InvalidArgument(format!(
                "{} not found in {}: build the binaries first (cargo build --profile dist) or pass --bin-dir",
                name,
                opts.bin_dir.display()
            )))
        }
    };
    Ok((find("engram-scorer")?, find("engram-ingestor")?))
}

fn hook_specs(opts: &InstallOptions, scorer: &Path, ingestor: &Path) -> Vec<HookSpec> {
    let env = opts.engram_home.as_deref().map(|h| format!("ENGRAM_HOME={} ", shell_quote(h))).unwrap_or_default();
    let h = opts.target.name();
    let cmd = |bin: &Path, event: &str| format!("{env}{} hook {event} --harness {h}", shell_quote(bin));
    let tool_matcher = match opts.target {
        Target::Claude => Some("Bash|Edit|MultiEdit|Write|Read|Grep|Glob|NotebookEdit"),
        Target::Codex => None,
    };
    vec![
        HookSpec { event: "SessionStart", matcher: None, command: cmd(scorer, "session-start"), timeout: 10 },
        HookSpec { event: "UserPromptSubmit", matcher: None, command: cmd(scorer, "user-prompt-submit"), timeout: 10 },
        HookSpec { event: "PreToolUse", matcher: tool_matcher, command: cmd(scorer, "pre-tool-use"), timeout: 5 },
        HookSpec { event: "PostToolUse", matcher: None, command: cmd(ingestor, "post-tool-use"), timeout: 5 },
        HookSpec { event: "Stop", matcher: None, command: cmd(ingestor, "stop"), timeout: 5 },
        HookSpec { event: "SessionEnd", matcher: None, command: cmd(ingestor, "session-end"), timeout: 5 },
        HookSpec { event: "PreCompact", matcher: None, command: cmd(ingestor, "pre-compact"), timeout: 5 },
    ]
}

fn group_for(spec: &HookSpec) -> Json {
    let mut group = Vec::new();
    if let Some(m) = spec.matcher {
        group.push(("matcher".to_owned(), Json::Str(m.to_owned())));
    }
    let handler = Json::Obj(vec![
        ("type".into(), Json::Str("command".into())),
        ("command".into(), Json::Str(spec.command.clone())),
        ("timeout".into(), Json::Num(spec.timeout.into())),
    ]);
    group.push(("hooks".to_owned(), Json::Arr(vec![handler])));
    Json::Obj(group)
}

/// Whether a matcher group holds only Engram's handlers.
fn is_engram_group(group: &Json) -> bool {
    match group.get("hooks") {
        Some(Json::Arr(handlers)) if !handlers.is_empty() => {
            handlers.iter().all(|h| h.get("command").and_then(Json::str).is_some_and(is_engram_command))
        }
        _ => false,
    }
}

fn group_command(group: &Json) -> String {
    match group.get("hooks") {
        Some(Json::Arr(h)) => {
            h.iter().filter_map(|x| x.get("command").and_then(Json::str)).collect::<Vec<_>>().join("; ")
        }
        _ => String::new(),
    }
}

/// Puts Engram's groups into `root.hooks`; returns the `+`/`-` lines.
fn merge_hooks(root: &mut Json, specs: &[HookSpec], path: &Path) -> Result<Vec<String>, Error> {
    let not_object = || Error::InvalidArgument(format!("{}: \"hooks\" is not an object; fix it first", path.display()));
    let hooks = root.object_at("hooks").ok_or_else(not_object)?;
    let mut items = Vec::new();
    for spec in specs {
        let wanted = group_for(spec);
        let Json::Obj(events) = hooks else { return Err(not_object()) };
        if !events.iter().any(|(k, _)| k == spec.event) {
            events.push((spec.event.to_owned(), Json::Arr(Vec::new())));
        }
        let Some(Json::Arr(groups)) = hooks.get_mut(spec.event) else {
            return Err(Error::InvalidArgument(format!(
                "{}: hooks.{} is not an array; fix it first",
                path.display(),
                spec.event
            )));
        };
        if groups.contains(&wanted) && groups.iter().filter(|g| is_engram_group(g)).count() == 1 {
            continue;
        }
        for old in groups.iter().filter(|g| is_engram_group(g) && **g != wanted) {
            items.push(format!("- hooks.{}: {}", spec.event, group_command(old)));
        }
        groups.retain(|g| !is_engram_group(g));
        groups.push(wanted);
        let matcher = spec.matcher.map(|m| format!(" (matcher {m})")).unwrap_or_default();
        items.push(format!("+ hooks.{}{matcher}: {}", spec.event, spec.command));
    }
    Ok(items)
}

/// Takes Engram's groups out of `root.hooks`; returns the `-` lines.
fn remove_hooks(root: &mut Json) -> Vec<String> {
    let mut items = Vec::new();
    let Some(hooks) = root.get_mut("hooks") else { return items };
    let Json::Obj(events) = hooks else { return items };
    for (event, groups) in events.iter_mut() {
        let Json::Arr(list) = groups else { continue };
        for g in list.iter().filter(|g| is_engram_group(g)) {
            items.push(format!("- hooks.{event}: {}", group_command(g)));
        }
        let before = list.len();
        list.retain(|g| !is_engram_group(g));
        if list.is_empty() && before > 0 {
            // Mark for removal below: the event held only Engram's groups.
            *groups = Json::Null;
        }
    }
    events.retain(|(_, v)| *v != Json::Null);
    if hooks.is_empty_container() && !items.is_empty() {
        root.remove("hooks");
    }
    items
}

/// The `extraKnownMarketplaces.engram` entry for the marketplace in `dir`.
fn marketplace_entry(dir: &Path) -> Json {
    Json::Obj(vec![(
        "source".into(),
        Json::Obj(vec![
            ("source".into(), Json::Str("directory".into())),
            ("path".into(), Json::Str(dir.to_string_lossy().into_owned())),
        ]),
    )])
}

/// Whether a marketplace entry is Engram's (a directory source ending in the plugin directory).
fn is_engram_marketplace(entry: &Json) -> bool {
    let source = entry.get("source");
    source.and_then(|s| s.get("source")).and_then(Json::str) == Some("directory")
        && source.and_then(|s| s.get("path")).and_then(Json::str).is_some_and(|p| p.ends_with("claude-plugin"))
}

/// Registers the plugin's marketplace and enables the plugin; returns the `+` lines.
fn merge_plugin(root: &mut Json, dir: &Path, path: &Path, warnings: &mut Vec<String>) -> Result<Vec<String>, Error> {
    let mut items = Vec::new();
    let wanted = marketplace_entry(dir);
    let markets = root.object_at("extraKnownMarketplaces").ok_or_else(|| {
        Error::InvalidArgument(format!("{}: \"extraKnownMarketplaces\" is not an object; fix it first", path.display()))
    })?;
    match markets.get(crate::plugin::NAME) {
        Some(existing) if *existing == wanted => {}
        Some(existing) if !is_engram_marketplace(existing) => {
            warnings.push(format!(
                "{}: extraKnownMarketplaces.engram is not Engram's; the plugin was not added",
                path.display()
            ));
            if markets.is_empty_container() {
                root.remove("extraKnownMarketplaces");
            }
            return Ok(items);
        }
        _ => {
            let Json::Obj(m) = markets else { unreachable!("object_at returns an object") };
            match m.iter_mut().find(|(k, _)| k == crate::plugin::NAME) {
                Some(slot) => slot.1 = wanted,
                None => m.push((crate::plugin::NAME.to_owned(), wanted)),
            }
            items.push(format!("+ extraKnownMarketplaces.engram: {}", dir.display()));
        }
    }
    let enabled = root.object_at("enabledPlugins").ok_or_else(|| {
        Error::InvalidArgument(format!("{}: \"enabledPlugins\" is not an object; fix it first", path.display()))
    })?;
    if enabled.get(crate::plugin::PLUGIN_ID) != Some(&Json::Bool(true)) {
        let Json::Obj(m) = enabled else { unreachable!("object_at returns an object") };
        match m.iter_mut().find(|(k, _)| k == crate::plugin::PLUGIN_ID) {
            Some(slot) => slot.1 = Json::Bool(true),
            None => m.push((crate::plugin::PLUGIN_ID.to_owned(), Json::Bool(true))),
        }
        items.push(format!(
            "+ enabledPlugins.{}: skills /{}",
            crate::plugin::PLUGIN_ID,
            crate::plugin::skill_names().join(", /")
        ));
    }
    Ok(items)
}

/// Takes the plugin's entries out; returns the `-` lines.
fn remove_plugin(root: &mut Json) -> Vec<String> {
    let mut items = Vec::new();
    if let Some(markets) = root.get_mut("extraKnownMarketplaces")
        && markets.get(crate::plugin::NAME).is_some_and(is_engram_marketplace)
    {
        markets.remove(crate::plugin::NAME);
        items.push("- extraKnownMarketplaces.engram".to_owned());
        if markets.is_empty_container() {
            root.remove("extraKnownMarketplaces");
        }
    }
    if !items.is_empty()
        && let Some(enabled) = root.get_mut("enabledPlugins")
        && enabled.remove(crate::plugin::PLUGIN_ID).is_some()
    {
        items.push(format!("- enabledPlugins.{}", crate::plugin::PLUGIN_ID));
        if enabled.is_empty_container() {
            root.remove("enabledPlugins");
        }
    }
    items
}

fn mcp_entry(opts: &InstallOptions, scorer: &Path) -> Json {
    let mut entry = Vec::new();
    if opts.target == Target::Claude {
        entry.push(("type".to_owned(), Json::Str("stdio".into())));
    }
    entry.push(("command".to_owned(), Json::Str(scorer.to_string_lossy().into_owned())));
    entry.push(("args".to_owned(), Json::Arr(vec![Json::Str("mcp".into())])));
    if let Some(h) = &opts.engram_home {
        entry.push(("env".to_owned(), Json::Obj(vec![("ENGRAM_HOME".into(), Json::Str(h.to_string_lossy().into()))])));
    }
    Json::Obj(entry)
}

/// Whether an MCP server entry runs `engram-scorer mcp`.
fn is_engram_server(entry: &Json) -> bool {
    entry.get("command").and_then(Json::str).is_some_and(|c| c.ends_with("engram-scorer"))
        && matches!(entry.get("args"), Some(Json::Arr(a)) if a.first().and_then(Json::str) == Some("mcp"))
}

fn merge_mcp_json(root: &mut Json, entry: Json, path: &Path, warnings: &mut Vec<String>) -> Result<Vec<String>, Error> {
    let servers = root.object_at("mcpServers").ok_or_else(|| {
        Error::InvalidArgument(format!("{}: \"mcpServers\" is not an object; fix it first", path.display()))
    })?;
    match servers.get("engram") {
        Some(existing) if *existing == entry => Ok(Vec::new()),
        Some(existing) if !is_engram_server(existing) => {
            warnings.push(format!(
                "{}: mcpServers.engram exists and is not Engram's server; left unchanged (remove it and install again)",
                path.display()
            ));
            if servers.is_empty_container() {
                root.remove("mcpServers");
            }
            Ok(Vec::new())
        }
        existing => {
            let mut items = Vec::new();
            if existing.is_some() {
                items.push("- mcpServers.engram (an older Engram entry)".to_owned());
            }
            let Json::Obj(m) = servers else { unreachable!("object_at returns an object") };
            match m.iter_mut().find(|(k, _)| k == "engram") {
                Some(slot) => slot.1 = entry,
                None => m.push(("engram".to_owned(), entry)),
            }
            let cmd = servers.get("engram").and_then(|e| e.get("command")).and_then(Json::str).unwrap_or_default();
            items.push(format!("+ mcpServers.engram: {cmd} mcp"));
            Ok(items)
        }
    }
}

fn remove_mcp_json(root: &mut Json) -> Vec<String> {
    let Some(servers) = root.get_mut("mcpServers") else { return Vec::new() };
    if !servers.get("engram").is_some_and(is_engram_server) {
        return Vec::new();
    }
    servers.remove("engram");
    if servers.is_empty_container() {
        root.remove("mcpServers");
    }
    vec!["- mcpServers.engram".to_owned()]
}

// ---------------------------------------------------------------------------
// config.toml, edited as text
// ---------------------------------------------------------------------------

const TOML_MARK: &str = "# added by engram";
const TOML_BEGIN: &str =
    "# >>> engram: added by `engram-ingestor install codex`; `engram-ingestor uninstall codex` removes it";
const TOML_END: &str = "# <<< engram";
const TOML_WAS_FALSE: &str = "# engram: was false";

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn header_name(line: &str) -> Option<&str> {
    let t = line.trim();
    let t = t.split(" #").next().unwrap_or(t).trim();
    (t.starts_with('[') && t.ends_with(']') && !t.starts_with("[[")).then(|| t[1..t.len() - 1].trim())
}

/// Takes Engram's lines out of a config.toml text; returns it and the `-` lines.
fn remove_toml(text: &str) -> (String, Vec<String>) {
    let mut out: Vec<String> = Vec::new();
    let mut items = Vec::new();
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim() == TOML_BEGIN {
            in_block = true;
            // The blank line install puts before the block.
            if out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            continue;
        }
        if in_block {
            if bare.trim() == TOML_END {
                in_block = false;
            } else if let Some(name) = header_name(bare) {
                items.push(format!("- [{name}] (Engram's block)"));
            }
            continue;
        }
        if bare.trim_end().ends_with(TOML_MARK) {
            items.push(format!("- {}", bare.trim_end().trim_end_matches(TOML_MARK).trim_end()));
            continue;
        }
        if bare.trim_end().ends_with(TOML_WAS_FALSE) {
            let indent: String = bare.chars().take_while(|c| c.is_whitespace()).collect();
            let newline = &line[bare.len()..];
            out.push(format!("{indent}codex_hooks = false{newline}"));
            items.push("- codex_hooks = true (back to false)".to_owned());
            continue;
        }
        out.push(line.to_owned());
    }
    (out.concat(), items)
}

fn parse_toml(text: &str, path: &Path) -> Result<toml::Table, Error> {
    toml::from_str(text).map_err(|e| {
        Error::InvalidArgument(format!("{} is not valid TOML ({e}); fix it, then run install again", path.display()))
    })
}

/// Adds `codex_hooks = true` under `[features]` and the `[mcp_servers.engram]`
/// table (see the module docs); returns the text and the `+` lines.
fn merge_toml(
    text: &str,
    scorer: &Path,
    engram_home: Option<&Path>,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(String, Vec<String>), Error> {
    let original = parse_toml(text, path)?;
    // Start from the text without Engram's lines: installing again puts the
    // same lines back in the same places.
    let (base, _) = remove_toml(text);
    let base_parsed = parse_toml(&base, path)?;
    let mut lines: Vec<String> = base.split_inclusive('\n').map(str::to_owned).collect();
    if let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
    {
        last.push('\n');
    }
    let mut items = Vec::new();
    let mut block = String::new();

    let features = base_parsed.get("features");
    match features.and_then(|f| f.get("codex_hooks")).and_then(toml::Value::as_bool) {
        Some(true) => {}
        Some(false) => {
            let mut in_features = false;
            let mut done = false;
            for l in lines.iter_mut() {
                if let Some(name) = header_name(l) {
                    in_features = name == "features";
                    continue;
                }
                let t = l.trim_start();
                if in_features && t.starts_with("codex_hooks") && t.contains("false") {
                    let indent: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
                    *l = format!("{indent}codex_hooks = true {TOML_WAS_FALSE}\n");
                    done = true;
                    break;
                }
            }
            if !done {
                return Err(Error::InvalidArgument(format!(
                    "{}: codex_hooks = false is written in a form install does not edit; set it to true yourself",
                    path.display()
                )));
            }
            items.push("+ [features] codex_hooks = true (was false)".to_owned());
        }
        None => match lines.iter().position(|l| header_name(l) == Some("features")) {
            Some(i) => {
                lines.insert(i + 1, format!("codex_hooks = true {TOML_MARK}\n"));
                items.push("+ [features] codex_hooks = true".to_owned());
            }
            None if features.is_some() => {
                return Err(Error::InvalidArgument(format!(
                    "{}: features is written in a form install does not edit; add codex_hooks = true to it yourself",
                    path.display()
                )));
            }
            None => {
                block.push_str("[features]\ncodex_hooks = true\n");
                items.push("+ [features] codex_hooks = true".to_owned());
            }
        },
    }

    if base_parsed.get("mcp_servers").and_then(|m| m.get("engram")).is_some() {
        warnings
            .push(format!("{}: [mcp_servers.engram] exists and is not Engram's block; left unchanged", path.display()));
    } else {
        block.push_str("[mcp_servers.engram]\n");
        block.push_str(&format!("command = {}\n", toml_string(&scorer.to_string_lossy())));
        block.push_str("args = [\"mcp\"]\n");
        if let Some(h) = engram_home {
            block.push_str(&format!("env = {{ ENGRAM_HOME = {} }}\n", toml_string(&h.to_string_lossy())));
        }
        items.push(format!("+ [mcp_servers.engram] command = {} args = [\"mcp\"]", scorer.display()));
    }
    if !block.is_empty() {
        if !lines.is_empty() {
            lines.push("\n".to_owned());
        }
        lines.push(format!("{TOML_BEGIN}\n{block}{TOML_END}\n"));
    }
    let out = lines.concat();
    if out == text {
        return Ok((out, Vec::new()));
    }
    // Check the result: valid, hooks on, and nothing of the user's changed.
    let check: toml::Table = toml::from_str(&out).map_err(|e| {
        Error::InvalidArgument(format!(
            "{}: editing it would give invalid TOML ({e}); add [mcp_servers.engram] and codex_hooks = true yourself",
            path.display()
        ))
    })?;
    if check.get("features").and_then(|f| f.get("codex_hooks")).and_then(toml::Value::as_bool) != Some(true) {
        return Err(Error::InvalidArgument(format!("{}: could not turn on codex_hooks", path.display())));
    }
    for (k, v) in &original {
        if k != "features" && k != "mcp_servers" && check.get(k) != Some(v) {
            return Err(Error::InvalidArgument(format!("{}: editing it would change `{k}`; aborted", path.display())));
        }
    }
    Ok((out, items))
}

// ---------------------------------------------------------------------------
// Files and the install record
// ---------------------------------------------------------------------------

/// What install remembers about a file it changed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct FileRecord {
    path: PathBuf,
    /// The file existed before install first changed it.
    existed: bool,
    /// Its bytes then (absent when it was edited between two installs).
    original: Option<String>,
    /// blake3 of the bytes install last wrote.
    written: String,
    /// Install created the file's directory too.
    #[serde(default)]
    dir_created: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    target: String,
    scope: String,
    files: Vec<FileRecord>,
}

/// The name of one install: harness and scope (`claude-user`, `codex-project-<hash>`).
pub fn install_name(target: Target, project: Option<&Path>) -> String {
    let scope = match project {
        None => "user".to_owned(),
        Some(p) => format!("project-{}", &blake3::hash(p.as_os_str().as_encoded_bytes()).to_hex()[..16]),
    };
    format!("{}-{scope}", target.name())
}

fn record_path(paths: &Paths, target: Target, project: Option<&Path>) -> PathBuf {
    paths.home().join("install").join(format!("{}.json", install_name(target, project)))
}

fn load_record(path: &Path) -> Record {
    fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The file to write for `path`: its target when it is a symlink (dotfile managers).
fn resolve(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

fn read_text(path: &Path) -> Result<Option<String>, Error> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Replaces `path` atomically, keeping its permissions (new files: 0600 for
/// `.claude.json`-like state, else 0644).
fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    let dir = shared::base::fsutil::parent_dir(path);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mode = fs::metadata(path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
    let tmp = shared::base::fsutil::temp_path_for(path);
    let result = (|| {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        shared::base::fsutil::fsync_dir(&dir)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// Removes the directory of `file` if install created it and it is now empty.
fn remove_dir_if_created(file: &Path, created: bool) {
    if created {
        // Fails (and is left) when something else is in it.
        let _ = fs::remove_dir(shared::base::fsutil::parent_dir(file));
    }
}

/// One file's planned new content.
struct Plan {
    path: PathBuf,
    before: Option<String>,
    after: String,
    items: Vec<String>,
}

fn settings_files(opts: &InstallOptions) -> (PathBuf, PathBuf) {
    match (opts.target, &opts.project) {
        (Target::Claude, None) => (opts.dirs.claude_dir.join("settings.json"), opts.dirs.claude_json.clone()),
        (Target::Claude, Some(d)) => (d.join(".claude").join("settings.json"), d.join(".mcp.json")),
        (Target::Codex, None) => (opts.dirs.codex_home.join("hooks.json"), opts.dirs.codex_home.join("config.toml")),
        (Target::Codex, Some(d)) => (d.join(".codex").join("hooks.json"), d.join(".codex").join("config.toml")),
    }
}

fn plan_install(opts: &InstallOptions, plugin_dir: &Path, warnings: &mut Vec<String>) -> Result<Vec<Plan>, Error> {
    let (scorer, ingestor) = binaries(opts)?;
    let specs = hook_specs(opts, &scorer, &ingestor);
    let (hooks_file, mcp_file) = settings_files(opts);
    let mut plans = Vec::new();

    let hooks_path = resolve(&hooks_file);
    let before = read_text(&hooks_path)?;
    let mut doc = JsonDoc::parse(&hooks_path, before.as_deref())?;
    let mut items = merge_hooks(&mut doc.root, &specs, &hooks_path)?;
    if opts.plugin && opts.target == Target::Claude {
        items.extend(merge_plugin(&mut doc.root, plugin_dir, &hooks_path, warnings)?);
    }
    let after = if items.is_empty() && before.is_some() { before.clone().unwrap_or_default() } else { doc.render() };
    plans.push(Plan { path: hooks_path, before, after, items });

    let mcp_path = resolve(&mcp_file);
    let before = read_text(&mcp_path)?;
    match opts.target {
        Target::Claude => {
            let mut doc = JsonDoc::parse(&mcp_path, before.as_deref())?;
            let items = merge_mcp_json(&mut doc.root, mcp_entry(opts, &scorer), &mcp_path, warnings)?;
            let after =
                if items.is_empty() && before.is_some() { before.clone().unwrap_or_default() } else { doc.render() };
            plans.push(Plan { path: mcp_path, before, after, items });
        }
        Target::Codex => {
            let text = before.clone().unwrap_or_default();
            let (after, items) = merge_toml(&text, &scorer, opts.engram_home.as_deref(), &mcp_path, warnings)?;
            plans.push(Plan { path: mcp_path, before, after, items });
        }
    }
    Ok(plans)
}

/// Installs Engram's hooks and MCP server for `opts.target`.
pub fn install(paths: &Paths, opts: &InstallOptions) -> Result<Report, Error> {
    // A mistyped --project must not become a new folder with agent settings in it.
    if let Some(dir) = opts.project.as_deref()
        && !dir.is_dir()
    {
        return Err(Error::InvalidArgument(format!("--project {}: no such directory", dir.display())));
    }
    let mut report = Report { dry_run: opts.dry_run, ..Report::default() };
    let plugin_dir = crate::plugin::marketplace_dir(paths);
    let plans = plan_install(opts, &plugin_dir, &mut report.warnings)?;
    let record_file = record_path(paths, opts.target, opts.project.as_deref());
    let mut record = load_record(&record_file);
    record.target = opts.target.name().to_owned();
    record.scope = opts.project.as_ref().map_or("user".into(), |p| p.display().to_string());
    // Directories missing before this run (both Codex files share one).
    let missing: Vec<PathBuf> =
        plans.iter().map(|p| shared::base::fsutil::parent_dir(&p.path)).filter(|d| !d.exists()).collect();
    for plan in plans {
        let changed = plan.before.as_deref() != Some(plan.after.as_str());
        let status = match (&plan.before, changed) {
            (_, false) => FileStatus::Unchanged,
            (None, true) => FileStatus::Created,
            (Some(_), true) => FileStatus::Modified,
        };
        if changed && !opts.dry_run {
            let dir_created = missing.contains(&shared::base::fsutil::parent_dir(&plan.path));
            write_file(&plan.path, &plan.after)?;
            let written = hash(plan.after.as_bytes());
            let before_hash = plan.before.as_deref().map(|b| hash(b.as_bytes()));
            match record.files.iter_mut().find(|f| f.path == plan.path) {
                // Untouched since install last wrote it: the original still holds.
                Some(f) if before_hash.as_deref() == Some(f.written.as_str()) => f.written = written,
                Some(f) => {
                    f.original = None;
                    f.written = written;
                }
                None => record.files.push(FileRecord {
                    path: plan.path.clone(),
                    existed: plan.before.is_some(),
                    original: plan.before.clone(),
                    written,
                    dir_created,
                }),
            }
        }
        report.files.push(FileChange { path: plan.path, status, items: plan.items });
    }
    if opts.plugin && opts.target == Target::Claude {
        // The plugin's files live in the data home (rewritten when they differ).
        let status = if crate::plugin::is_current(&plugin_dir) {
            FileStatus::Unchanged
        } else if plugin_dir.exists() {
            FileStatus::Modified
        } else {
            FileStatus::Created
        };
        if status != FileStatus::Unchanged && !opts.dry_run {
            crate::plugin::write(&plugin_dir).map_err(|e| Error::io(&plugin_dir, e))?;
        }
        let items = if status == FileStatus::Unchanged {
            Vec::new()
        } else {
            vec![format!("+ plugin engram: skills /{}", crate::plugin::skill_names().join(", /"))]
        };
        report.files.push(FileChange { path: plugin_dir, status, items });
    }
    if !opts.dry_run {
        let bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
        shared::base::fsutil::atomic_write(&record_file, &bytes).map_err(|e| Error::io(&record_file, e))?;
    }
    Ok(report)
}

/// Whether another scope's install (another install record of Claude Code)
/// still has the plugin registered, so its files must stay.
fn plugin_still_registered(paths: &Paths, opts: &InstallOptions) -> bool {
    let mine = record_path(paths, opts.target, opts.project.as_deref());
    let Ok(entries) = fs::read_dir(paths.home().join("install")) else { return false };
    entries.filter_map(|e| e.ok()).map(|e| e.path()).any(|p| {
        p != mine
            && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("claude-"))
            && load_record(&p).files.iter().any(|f| {
                read_text(&f.path)
                    .ok()
                    .flatten()
                    .is_some_and(|t| t.contains(&*crate::plugin::marketplace_dir(paths).to_string_lossy()))
            })
    })
}

/// Removes what install added for `opts.target` (see the module docs).
pub fn uninstall(paths: &Paths, opts: &InstallOptions) -> Result<Report, Error> {
    let mut report = Report { dry_run: opts.dry_run, ..Report::default() };
    let record_file = record_path(paths, opts.target, opts.project.as_deref());
    let mut record = load_record(&record_file);
    let (hooks_file, mcp_file) = settings_files(opts);
    for (file, is_toml) in [(hooks_file, false), (mcp_file, opts.target == Target::Codex)] {
        let path = resolve(&file);
        let current = read_text(&path)?;
        let entry = record.files.iter().find(|f| f.path == path).cloned();
        let untouched = current.as_deref().map(|c| hash(c.as_bytes())) == entry.as_ref().map(|e| e.written.clone());
        // Exactly what install wrote: put the original bytes back.
        if let (true, Some(e)) = (untouched, &entry)
            && (e.original.is_some() || !e.existed)
        {
            let (_, items) = match (&current, is_toml) {
                (Some(c), true) => remove_toml(c),
                (Some(c), false) => {
                    let mut doc = JsonDoc::parse(&path, Some(c))?;
                    let mut items = remove_hooks(&mut doc.root);
                    items.extend(remove_plugin(&mut doc.root));
                    items.extend(remove_mcp_json(&mut doc.root));
                    (String::new(), items)
                }
                (None, _) => (String::new(), Vec::new()),
            };
            let status = if e.existed { FileStatus::Restored } else { FileStatus::Deleted };
            if !opts.dry_run {
                match &e.original {
                    Some(orig) if e.existed => write_file(&path, orig)?,
                    _ => {
                        fs::remove_file(&path).map_err(|err| Error::io(&path, err))?;
                        remove_dir_if_created(&path, e.dir_created);
                    }
                }
            }
            report.files.push(FileChange { path: path.clone(), status, items });
            record.files.retain(|f| f.path != path);
            continue;
        }
        // Edited since (or never recorded): take out only Engram's entries.
        let Some(text) = current else {
            record.files.retain(|f| f.path != path);
            continue;
        };
        let (after, items) = if is_toml {
            remove_toml(&text)
        } else {
            let mut doc = JsonDoc::parse(&path, Some(&text))?;
            let mut items = remove_hooks(&mut doc.root);
            items.extend(remove_plugin(&mut doc.root));
            items.extend(remove_mcp_json(&mut doc.root));
            let after = if items.is_empty() { text.clone() } else { doc.render() };
            (after, items)
        };
        let created_by_us = entry.as_ref().is_some_and(|e| !e.existed);
        let empty_now = if is_toml { after.trim().is_empty() } else { after.trim() == "{}" };
        let status = if after == text {
            FileStatus::Unchanged
        } else if created_by_us && empty_now {
            FileStatus::Deleted
        } else {
            FileStatus::Modified
        };
        if !opts.dry_run {
            match status {
                FileStatus::Deleted => {
                    fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                    remove_dir_if_created(&path, entry.as_ref().is_some_and(|e| e.dir_created));
                }
                FileStatus::Modified => write_file(&path, &after)?,
                _ => {}
            }
        }
        report.files.push(FileChange { path: path.clone(), status, items });
        record.files.retain(|f| f.path != path);
    }
    // The plugin's files, once no settings file of this harness names them.
    let plugin_dir = crate::plugin::marketplace_dir(paths);
    if opts.target == Target::Claude && plugin_dir.exists() && !plugin_still_registered(paths, opts) {
        if !opts.dry_run {
            fs::remove_dir_all(&plugin_dir).map_err(|e| Error::io(&plugin_dir, e))?;
        }
        report.files.push(FileChange {
            path: plugin_dir,
            status: FileStatus::Deleted,
            items: vec!["- plugin engram".to_owned()],
        });
    }
    if !opts.dry_run {
        if record.files.is_empty() {
            let _ = fs::remove_file(&record_file);
        } else {
            let bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
            shared::base::fsutil::atomic_write(&record_file, &bytes).map_err(|e| Error::io(&record_file, e))?;
        }
    }
    Ok(report)
}
