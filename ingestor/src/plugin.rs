//! The Claude Code plugin with seed 004's skills (`/remember`, `/forget`,
//! `/recall`, `/stash`, `/resume`, `/checkpoint`, `/resolve`), which
//! `install claude` writes into the data home as a one-plugin marketplace
//! (`<home>/claude-plugin/`) and registers in Claude Code's settings
//! (`extraKnownMarketplaces.engram` as a `directory` source,
//! `enabledPlugins["engram@engram"]`). The skills drive the MCP tools that
//! install registers as the `engram` server (`mcp__engram__…`); the plugin
//! declares no server of its own. Claude Code lists them as
//! `/engram:remember` …, and as `/remember` … where no other skill has the
//! name.

use std::fs;
use std::path::{Path, PathBuf};

use shared::base::paths::Paths;

/// The marketplace's and the plugin's name.
pub const NAME: &str = "engram";
/// `enabledPlugins` key.
pub const PLUGIN_ID: &str = "engram@engram";

/// The marketplace directory in the data home.
pub fn marketplace_dir(paths: &Paths) -> PathBuf {
    paths.home().join("claude-plugin")
}

const MCP: &str = "mcp__engram__";

struct Skill {
    name: &'static str,
    description: &'static str,
    hint: &'static str,
    tools: &'static [&'static str],
    body: &'static str,
}

const SESSION: &str = "The session key is in the header of the `<engram-context>` Engram injected (`session claude:…`); \
pass it as `session_id` (or the bare session id).";

const SKILLS: &[Skill] = &[
    Skill {
        name: "remember",
        description: "Save something to Engram's persistent memory (infers the knowledge type and tags).",
        hint: "<content>",
        tools: &["memory_save", "memory_resolve"],
        body: "Save this to persistent memory: $ARGUMENTS\n\n\
1. Rewrite it as one self-contained sentence a future session can use without this conversation.\n\
2. Pick its type: `fact` (verified information), `decision` (a choice and its reason), `preference` (how the \
user or project wants things), `pattern` (a recurring practice), `issue` (a known problem), `context` \
(background), `discovery` (inferred by combining memories; then pass their ids as `source_knowledge_ids`).\n\
3. Suggest two to four short lower-case tags (language, tool, area).\n\
4. Call `memory_save` with `content`, `type`, `tags`, `project` (the current directory's name) and `session_id`.\n\
5. Read the answer:\n\
   - `saved: true`: say it was saved, with its id.\n\
   - `duplicate_of`: say it is already remembered (quote the stored memory); nothing was saved.\n\
   - `staged: true`: it resembles a stored memory. Show both texts and ask the user (AskUserQuestion) which \
applies: same thing (merge), a new memory (keep_both), replaces the old one (replace), do not save (skip). \
Then call `memory_resolve` with `conflict_id`, `existing_id` and `action`.",
    },
    Skill {
        name: "forget",
        description: "Delete something from Engram's memory: search, confirm with the user, then forget.",
        hint: "<what>",
        tools: &["memory_search", "memory_forget"],
        body: "Forget what the user describes: $ARGUMENTS\n\n\
1. Call `memory_search` with it as the query (`limit` 10).\n\
2. Show the matches (id, type, text). If none fits, say so and stop.\n\
3. Ask the user (AskUserQuestion) which of them to forget; never forget without a confirmation.\n\
4. Call `memory_forget` with the confirmed `ids` and a short `reason` (never the memory's text).\n\
5. Say what was forgotten; its text leaves the tapes at the next `engram-ingestor compact`.",
    },
    Skill {
        name: "recall",
        description: "Search Engram's memory and present what it knows, grouped by type.",
        hint: "<query>",
        tools: &["memory_search", "memory_get", "memory_graph"],
        body: "Recall what memory holds about: $ARGUMENTS\n\n\
1. Call `memory_search` with it as the query.\n\
2. Present the results grouped by type (facts, decisions, preferences, patterns, issues, context, discoveries, \
and the rest), each with its id and a one-line text.\n\
3. Offer details: `memory_get` with `include_graph: true` gives a memory's sessions, its connections and, for a \
discovery, its reasoning chain; `memory_graph` shows what is connected around it.",
    },
    Skill {
        name: "stash",
        description: "Park the current conversation thread in Engram, to resume it later.",
        hint: "[label]",
        tools: &["memory_stash"],
        body: "Stash the current conversation thread.\n\n\
Call `memory_stash` with `list: false`, `label` set to \"$ARGUMENTS\" (leave it out when empty: a label is made \
from the topic) and `session_id`. SESSION\n\
Then tell the user its id and label, and that `/resume` brings it back.",
    },
    Skill {
        name: "resume",
        description: "Resume a stashed conversation or a checkpoint: pick, list, search, or name one.",
        hint: "[list | search <query> | <topic or id>]",
        tools: &["memory_stash", "memory_resume"],
        body: "Resume a stashed conversation. Arguments: $ARGUMENTS\n\n\
- No arguments: call `memory_stash` (it lists the stashed conversations and recent checkpoints), ask the user \
to pick one (AskUserQuestion), then call `memory_resume` with its id.\n\
- `list`: call `memory_stash` and show them (id, label, when, summary).\n\
- `search <query>`: call `memory_stash`, keep those whose label or summary matches, show them.\n\
- Anything else (a `conv_…` or `fork_…` id, or words of a label): call `memory_resume` with it as \
`conversation_id`.\n\
Pass `session_id` to `memory_resume`. SESSION\n\
After resuming, read the returned `context` and continue from it; mention `resume_command` when the user wants \
the original session itself.",
    },
    Skill {
        name: "checkpoint",
        description: "Create a save point of this session in Engram (resume it later by its fork_ id).",
        hint: "[label]",
        tools: &["memory_checkpoint"],
        body: "Create a checkpoint of this session.\n\n\
Call `memory_checkpoint` with `label` set to \"$ARGUMENTS\" (leave it out when empty) and `session_id`. SESSION\n\
Then tell the user its `fork_…` id and what it captured; `/resume <id>` comes back to it.",
    },
    Skill {
        name: "resolve",
        description: "Handle Engram memory conflicts: list them, or resolve one (merge, keep_both, replace, skip).",
        hint: "[list | merge | keep_both | replace | skip]",
        tools: &["memory_staging", "memory_resolve"],
        body: "Handle memory conflicts. Arguments: $ARGUMENTS\n\n\
- No arguments or `list`: call `memory_staging` with `status: needs_clarification` and show each conflict: the \
new text, the existing memory it resembles, how alike. Offer the four choices.\n\
- `merge`, `keep_both`, `replace` or `skip`: take the oldest conflict from `memory_staging` (status \
`needs_clarification`), show it, and call `memory_resolve` with its `id` as `conflict_id`, its `conflict_with` \
as `existing_id`, and the action. `merge`: the same thing, folded into the existing memory. `keep_both`: a \
different memory. `replace`: the new one replaces the old (which is never injected again). `skip`: do not save \
the new one.\n\
Say what was done and how many conflicts are left.",
    },
];

/// Every file of the marketplace, relative path → content.
pub fn files() -> Vec<(PathBuf, String)> {
    let version = env!("CARGO_PKG_VERSION");
    let mut out = vec![
        (
            PathBuf::from(".claude-plugin/marketplace.json"),
            serde_json::to_string_pretty(&serde_json::json!({
                "name": NAME,
                "owner": {"name": "Engram"},
                "description": "Engram's skills for Claude Code, installed by `engram-ingestor install claude`",
                "plugins": [{
                    "name": NAME,
                    "source": "./engram",
                    "description": "Remember, recall, forget, stash, resume, checkpoint and resolve memory conflicts with Engram",
                    "version": version,
                }],
            }))
            .unwrap_or_default()
                + "\n",
        ),
        (
            PathBuf::from("engram/.claude-plugin/plugin.json"),
            serde_json::to_string_pretty(&serde_json::json!({
                "name": NAME,
                "version": version,
                "description": "Engram's memory skills: /remember, /forget, /recall, /stash, /resume, /checkpoint, /resolve (they use the engram MCP server that install registers)",
                "author": {"name": "Engram"},
            }))
            .unwrap_or_default()
                + "\n",
        ),
    ];
    for s in SKILLS {
        let tools: Vec<String> = s.tools.iter().map(|t| format!("{MCP}{t}")).collect();
        let text = format!(
            "---\nname: {}\ndescription: {}\nargument-hint: {}\nallowed-tools: {}\n---\n\n{}\n",
            s.name,
            yaml_string(s.description),
            yaml_string(s.hint),
            tools.join(", "),
            s.body.replace("SESSION", SESSION)
        );
        out.push((PathBuf::from(format!("engram/skills/{}/SKILL.md", s.name)), text));
    }
    out
}

/// A YAML double-quoted scalar (frontmatter values hold `: `).
fn yaml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Whether the marketplace in `dir` holds exactly [`files`].
pub fn is_current(dir: &Path) -> bool {
    files().iter().all(|(rel, text)| fs::read_to_string(dir.join(rel)).is_ok_and(|t| t == *text))
}

/// Writes the marketplace into `dir` (replacing what an older version wrote).
pub fn write(dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    for (rel, text) in files() {
        let path = dir.join(rel);
        fs::create_dir_all(shared::base::fsutil::parent_dir(&path))?;
        shared::base::fsutil::atomic_write(&path, text.as_bytes())?;
    }
    Ok(())
}

/// The skill names, for reports and tests.
pub fn skill_names() -> Vec<&'static str> {
    SKILLS.iter().map(|s| s.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_skill_has_a_file_with_frontmatter_and_tools() {
        assert_eq!(skill_names(), ["remember", "forget", "recall", "stash", "resume", "checkpoint", "resolve"]);
        let files = files();
        for name in skill_names() {
            let (_, text) = files.iter().find(|(p, _)| p.ends_with(format!("{name}/SKILL.md"))).expect("skill file");
            assert!(text.starts_with(&format!("---\nname: {name}\ndescription: \"")), "{text}");
            let front = text.split("---\n").nth(1).expect("frontmatter");
            for line in front.lines() {
                let (_, value) = line.split_once(": ").expect("key: value");
                assert!(!value.contains(": ") || value.starts_with('"'), "{line}");
            }
            assert!(text.contains("allowed-tools: mcp__engram__memory_"), "{text}");
            assert!(!text.contains("SESSION"), "{text}");
        }
        let manifest: serde_json::Value = serde_json::from_str(&files[1].1).expect("plugin.json");
        assert_eq!(manifest["name"], "engram");
        let market: serde_json::Value = serde_json::from_str(&files[0].1).expect("marketplace.json");
        assert_eq!(market["plugins"][0]["source"], "./engram");
    }
}
