//! Environment bodies: what detection found for a session, a memory's
//! categories and prerequisites.

use serde::{Deserialize, Serialize};

use crate::base::ids::MemoryId;

/// `env.detected`: the environment detection found for a working directory
/// when it happened (seeds 000, 001 and 004). The projection reads only this,
/// never the file system. With a session, it is that session's environment
/// (the latest one wins); without, it only makes the project known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvDetected {
    /// The working directory looked at.
    pub cwd: String,
    /// The project's root directory.
    pub root: String,
    /// The project's key: the normalised git remote, else the repository's or
    /// root's path (`shared::domain::env::project`).
    pub project: String,
    /// The project's name, for people.
    pub name: String,
    /// The normalised git remote, when the repository has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The marker that decided the root (`.git`, `package.json`, …); absent
    /// when none was found and the working directory is the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The technology stack, from marker files and dependencies (sorted).
    pub stack: Vec<String>,
    /// The environment's tags (sorted, unique): the stack, and what the
    /// path, the remote and the directory structure say.
    pub tags: Vec<String>,
    /// The operating system (`linux`, `darwin`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// The MCP servers configured for the session (sorted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

/// `memory.categorized`: category paths (`/`-separated, lower case, e.g.
/// `development/frontend/react`) a memory joins or leaves. With `replace`,
/// it leaves every category it had first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryCategorized {
    /// The memory.
    pub memory_id: MemoryId,
    /// Paths it joins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    /// Paths it leaves.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    /// Leave every current category before joining `add`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

/// `memory.prerequisites_set`: a memory's prerequisites, whole (an empty
/// object clears them; `shared::domain::env::prereq`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryPrerequisitesSet {
    /// The memory.
    pub memory_id: MemoryId,
    /// `{tags, repos, os, paths, mcp_servers}`, each a list of strings.
    pub prerequisites: Prerequisites,
}

/// A memory's prerequisites: where it applies (`memories.prerequisites`,
/// stored as JSON such as `{"tags": ["react"], "os": ["darwin"]}`).
/// Which of them gate and how is the environment model's business.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prerequisites {
    /// Tags (soft).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Project keys or names (any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repos: Vec<String>,
    /// Operating systems (any): `linux`, `darwin`, `windows`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub os: Vec<String>,
    /// Directories the working directory must be in (any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// MCP servers that must all be configured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

impl Prerequisites {
    /// Reads the stored JSON (anything unreadable: none).
    pub fn parse(json: Option<&str>) -> Prerequisites {
        json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default()
    }

    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        *self == Prerequisites::default()
    }

    /// The stored JSON, `None` when empty.
    pub fn to_json(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// Adds every requirement of `more` (each list stays sorted and unique).
    pub fn extend(&mut self, more: &Prerequisites) {
        for (mine, theirs) in [
            (&mut self.tags, &more.tags),
            (&mut self.repos, &more.repos),
            (&mut self.os, &more.os),
            (&mut self.paths, &more.paths),
            (&mut self.mcp_servers, &more.mcp_servers),
        ] {
            mine.extend(theirs.iter().cloned());
            mine.sort();
            mine.dedup();
        }
    }
}
