//! The environment's memory commands, shared by the ingestor's `memory …`
//! commands and the scorer's MCP tools: categorize, set or extend a memory's
//! prerequisites. Each is one event appended through the journal after the
//! memory and the arguments are checked, like [`crate::domain::memory::ops`].

use serde_json::Value;

use super::categories;
use crate::base::ids::MemoryId;
use crate::base::time::Ts;
use crate::domain::memory::ops::{OpError, OpResult, check_tags, require_live};
use crate::storage::event::Prerequisites;
use crate::storage::event::{Body, MemoryCategorized, MemoryPrerequisitesSet};
use crate::storage::journal::Journal;
use crate::storage::redact;

fn append(journal: &mut Journal, now: Ts, body: Body) -> OpResult<()> {
    let e = journal.event(now, None, body);
    journal
        .append(std::slice::from_ref(&e))
        .map_err(|source| OpError::Store { context: "append to the tape log".into(), source })?;
    Ok(())
}

fn store_err(context: &str, e: rusqlite::Error) -> OpError {
    OpError::Store { context: context.to_owned(), source: crate::base::error::Error::sqlite(context, e) }
}

fn paths(list: &[String]) -> OpResult<Vec<String>> {
    let mut out = Vec::with_capacity(list.len());
    for p in list {
        out.push(redact::redact_text(&categories::normalize(p).map_err(OpError::Invalid)?).into_owned());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Adds `memory` to the categories `add` and removes it from `remove` (with
/// `replace`, from every category first); returns its categories after.
pub fn categorize(
    journal: &mut Journal,
    id: &str,
    add: &[String],
    remove: &[String],
    replace: bool,
    now: Ts,
) -> OpResult<Vec<String>> {
    let (add, remove) = (paths(add)?, paths(remove)?);
    if add.is_empty() && remove.is_empty() && !replace {
        return Err(OpError::Invalid("nothing to do: give categories to add or to remove".into()));
    }
    require_live(journal.store(), id)?;
    let body = MemoryCategorized { memory_id: MemoryId::from(id), add, remove, replace };
    append(journal, now, Body::MemoryCategorized(body))?;
    categories::of(journal.store().conn(), id).map_err(|e| store_err("read the categories", e))
}

/// Reads prerequisites given by a person or an agent: a JSON object (or a
/// string holding one) with only the keys `tags`, `repos`, `os`, `paths`,
/// `mcp_servers`, each a string or a list of strings.
pub fn parse_prerequisites(v: &Value) -> OpResult<Prerequisites> {
    let parsed;
    let v = match v {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s)
                .map_err(|e| OpError::Invalid(format!("prerequisites are not JSON: {e}")))?;
            &parsed
        }
        v => v,
    };
    let Value::Object(map) = v else {
        return Err(OpError::Invalid("prerequisites must be an object such as {\"os\": [\"linux\"]}".into()));
    };
    let mut p = Prerequisites::default();
    for (key, value) in map {
        let list: Vec<String> = match value {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| OpError::Invalid(format!("prerequisites.{key} must list strings")))?,
            _ => return Err(OpError::Invalid(format!("prerequisites.{key} must be a string or a list of strings"))),
        };
        let slot = match key.as_str() {
            "tags" => &mut p.tags,
            "repos" => &mut p.repos,
            "os" => &mut p.os,
            "paths" => &mut p.paths,
            "mcp_servers" => &mut p.mcp_servers,
            other => {
                return Err(OpError::Invalid(format!(
                    "unknown prerequisite {other:?}; one of: tags, repos, os, paths, mcp_servers"
                )));
            }
        };
        *slot = if key == "paths" {
            let mut l: Vec<String> = list.iter().map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect();
            l.sort();
            l.dedup();
            l
        } else {
            check_tags(&list)?
        };
    }
    Ok(p)
}

/// Sets a memory's prerequisites, whole (empty: none).
pub fn set_prerequisites(journal: &mut Journal, id: &str, p: Prerequisites, now: Ts) -> OpResult<()> {
    require_live(journal.store(), id)?;
    append(
        journal,
        now,
        Body::MemoryPrerequisitesSet(MemoryPrerequisitesSet { memory_id: MemoryId::from(id), prerequisites: p }),
    )
}

/// Adds `more` to a memory's prerequisites (seed 000's `add_prerequisites` of
/// feedback: "not applicable here" narrows where it applies); returns them.
pub fn add_prerequisites(journal: &mut Journal, id: &str, more: &Prerequisites, now: Ts) -> OpResult<Prerequisites> {
    require_live(journal.store(), id)?;
    let stored: Option<String> = journal
        .store()
        .conn()
        .query_row("SELECT prerequisites FROM memories WHERE id = ?1", [id], |r| r.get(0))
        .map_err(|e| store_err("read the prerequisites", e))?;
    let mut p = Prerequisites::parse(stored.as_deref());
    p.extend(more);
    set_prerequisites(journal, id, p.clone(), now)?;
    Ok(p)
}
