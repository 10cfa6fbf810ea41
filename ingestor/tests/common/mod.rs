//! Shared helpers of the ingestor integration tests: parsing a fixture and
//! counting what came out.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use ingestor::adapter::{ParseContext, ParseOutput};
use ingestor::adapters;
use ingestor::discover::SourceKind;
use ingestor::redact::Privacy;
use shared::event::{Body, Event};
use shared::time::Ts;

/// Reads a sidecar `.meta.json` next to an `agent-*.jsonl`, if any.
pub fn sidecar_of(path: &Path) -> Option<serde_json::Value> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".jsonl")?;
    let meta = path.with_file_name(format!("{stem}.meta.json"));
    let bytes = std::fs::read(meta).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Parses a whole source (JSONL from offset 0 in one call).
pub fn parse(kind: SourceKind, path: &Path) -> ParseOutput {
    let privacy = Privacy::default();
    let text = path.display().to_string();
    let side = sidecar_of(path);
    let mut ctx = ParseContext::new(&text, Ts(1_700_000_000_000), &privacy);
    ctx.sidecar = side.as_ref();
    if kind.is_jsonl() || kind == SourceKind::GeminiLegacy {
        let bytes = std::fs::read(path).expect("read fixture");
        adapters::parse_file_bytes(kind, &ctx, &bytes).expect("parse")
    } else {
        adapters::parse_whole(kind, &ctx).expect("parse")
    }
}

/// Counts by category.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub sessions: usize,
    pub msg_in: usize,
    pub msg_out: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub reads: usize,
    pub edits: usize,
    pub diagnostics: usize,
}

pub fn counts(out: &ParseOutput) -> Counts {
    let mut c = Counts { diagnostics: out.diagnostics.len(), ..Counts::default() };
    for e in &out.events {
        match &e.body {
            Body::SessionStarted(_) => c.sessions += 1,
            Body::MsgIn(_) => c.msg_in += 1,
            Body::MsgOut(_) => c.msg_out += 1,
            Body::ToolCall(_) => c.tool_calls += 1,
            Body::ToolResult(_) => c.tool_results += 1,
            Body::CodeRead(_) => c.reads += 1,
            Body::CodeEdit(_) => c.edits += 1,
            _ => {}
        }
    }
    c
}

pub fn kinds(events: &[Event]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.kind().to_owned()).or_insert(0) += 1;
    }
    m
}
