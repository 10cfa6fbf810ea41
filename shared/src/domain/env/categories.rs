//! Categories (seed 001 "categories", seed 000 `categories` and
//! `engram_categories`): a tree of `/`-separated paths, and the categories
//! each memory belongs to (any number).
//!
//! A path is lower case, its segments trimmed and non-empty
//! (`Development / Frontend/React` → `development/frontend/react`).
//! Joining a category makes the path and each of its ancestors known in
//! `categories`; a filter by a category matches the memories in it or in any
//! category below it (Engrammar's `matches_category`). The projection writes
//! only what `memory.categorized` events say.

use std::collections::BTreeSet;

use rusqlite::{Connection, params};

use crate::storage::event::MemoryCategorized;

/// Longest category path accepted, in characters.
pub const MAX_PATH: usize = 200;

/// The normalised path, or why it is refused.
pub fn normalize(path: &str) -> Result<String, String> {
    let segments: Vec<String> = path.split('/').map(|s| s.trim().to_lowercase()).collect();
    if segments.iter().any(String::is_empty) {
        return Err(format!("category {path:?} has an empty segment"));
    }
    let out = segments.join("/");
    if out.chars().count() > MAX_PATH {
        return Err(format!("category {path:?} is longer than {MAX_PATH} characters"));
    }
    Ok(out)
}

/// The path and its ancestors, root first (`a/b/c` → `a`, `a/b`, `a/b/c`).
pub fn with_ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(|(i, _)| &path[..i]).chain(std::iter::once(path))
}

/// Projects `memory.categorized` (the memory is known to exist).
pub fn apply(conn: &Connection, b: &MemoryCategorized) -> rusqlite::Result<Result<(), String>> {
    let mut add = Vec::new();
    for p in &b.add {
        match normalize(p) {
            Ok(p) => add.push(p),
            Err(e) => return Ok(Err(e)),
        }
    }
    let id = b.memory_id.as_str();
    if b.replace {
        conn.prepare_cached("DELETE FROM engram_categories WHERE engram_id = ?1")?.execute([id])?;
    }
    for p in &b.remove {
        // An unreadable path names no category: nothing to leave.
        if let Ok(p) = normalize(p) {
            conn.prepare_cached("DELETE FROM engram_categories WHERE engram_id = ?1 AND category_path = ?2")?
                .execute(params![id, p])?;
        }
    }
    for p in &add {
        for q in with_ancestors(p) {
            conn.prepare_cached("INSERT OR IGNORE INTO categories (path) VALUES (?1)")?.execute([q])?;
        }
        conn.prepare_cached("INSERT OR IGNORE INTO engram_categories (engram_id, category_path) VALUES (?1, ?2)")?
            .execute(params![id, p])?;
    }
    Ok(Ok(()))
}

/// The categories of a memory, sorted.
pub fn of(conn: &Connection, memory: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT category_path FROM engram_categories WHERE engram_id = ?1 ORDER BY category_path")?
        .query_map([memory], |r| r.get(0))?
        .collect()
}

/// The memories in `path` or in a category below it.
pub fn members(conn: &Connection, path: &str) -> rusqlite::Result<BTreeSet<String>> {
    let Ok(path) = normalize(path) else { return Ok(BTreeSet::new()) };
    conn.prepare_cached(
        "SELECT DISTINCT engram_id FROM engram_categories
         WHERE category_path = ?1 OR (category_path > ?1 || '/' AND category_path < ?1 || '0')",
    )?
    .query_map([&path], |r| r.get(0))?
    .collect()
}

/// Every known category with how many live memories are in it (directly).
pub fn tree(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    conn.prepare_cached(
        "SELECT c.path, COUNT(m.id) FROM categories c
         LEFT JOIN engram_categories ec ON ec.category_path = c.path
         LEFT JOIN memories m ON m.id = ec.engram_id AND m.is_deleted = 0
         GROUP BY c.path ORDER BY c.path",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalize(" Development / Frontend/React ").as_deref(), Ok("development/frontend/react"));
        assert!(normalize("a//b").is_err());
        assert!(normalize("").is_err());
        assert!(normalize("/a").is_err());
        assert_eq!(with_ancestors("a/b/c").collect::<Vec<_>>(), ["a", "a/b", "a/b/c"]);
        assert_eq!(with_ancestors("a").collect::<Vec<_>>(), ["a"]);
    }
}
