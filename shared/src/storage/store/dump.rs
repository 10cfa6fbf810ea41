//! A canonical text dump of the projection, for comparing two databases.

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use crate::base::error::{Result, SqlContext};

/// Every row of every ordinary table and view (FTS shadow tables excluded),
/// each ordered by all of its columns, plus the result of each FTS index's
/// integrity check against its content table. Two projections of the same
/// log give identical dumps. With `positions: false`, log positions (columns
/// named `lsn` or ending in `_lsn`, and `engram_state`) are left out, so that a log and the same
/// log with duplicated events compare equal.
pub fn canonical_dump(conn: &Connection, positions: bool) -> Result<String> {
    let mut out = String::new();
    let mut tables: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get::<_, Option<String>>(1)?.unwrap_or_default())))?.collect()
        })
        .sql("list tables")?;
    let fts: Vec<String> = tables
        .iter()
        .filter(|(_, sql)| sql.to_ascii_uppercase().contains("USING FTS5"))
        .map(|(n, _)| n.clone())
        .collect();
    tables.retain(|(name, sql)| {
        (positions || name != "engram_state")
            && !sql.to_ascii_uppercase().contains("USING FTS5")
            && !fts.iter().any(|f| name.starts_with(&format!("{f}_")))
    });
    for (table, _) in &tables {
        let mut columns: Vec<String> = conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .and_then(|mut s| s.query_map([], |r| r.get(1))?.collect())
            .sql("read columns")?;
        if !positions {
            columns.retain(|c| c != "lsn" && !c.ends_with("_lsn"));
        }
        let order: Vec<String> = (1..=columns.len()).map(|i| i.to_string()).collect();
        let with_rowid = table == "memories";
        let select = if with_rowid { format!("rowid, {}", columns.join(", ")) } else { columns.join(", ") };
        let order_by = if with_rowid { "1".to_owned() } else { order.join(", ") };
        out.push_str(&format!("## {table} ({select})\n"));
        let mut stmt = conn.prepare(&format!("SELECT {select} FROM \"{table}\" ORDER BY {order_by}")).sql("dump")?;
        let n = stmt.column_count();
        let mut rows = stmt.query([]).sql("dump")?;
        while let Some(row) = rows.next().sql("dump")? {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(match row.get_ref(i).sql("dump")? {
                    ValueRef::Null => "NULL".to_owned(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => format!("{v:?}"),
                    ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                    ValueRef::Blob(b) => format!("x'{}'", b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
                });
            }
            out.push_str(&cells.join("|"));
            out.push('\n');
        }
    }
    for table in &fts {
        let check = conn.execute(&format!("INSERT INTO \"{table}\"(\"{table}\") VALUES ('integrity-check')"), []);
        out.push_str(&format!(
            "## fts {table}: {}\n",
            if check.is_ok() { "ok".to_owned() } else { format!("{check:?}") }
        ));
    }
    Ok(out)
}
