//! The harness adapters and a closed enum to dispatch on them.
//!
//! JSONL logs (Claude Code, Codex CLI, Gemini CLI chats) are parsed
//! incrementally with [`parse_chunk`] from a resume state made by
//! [`initial_state`]; SpecStory markdown exports too, from a turn boundary
//! to the end of the file ([`specstory`]); whole-file formats (Gemini legacy
//! JSON, OpenCode storage and database) are parsed as a whole by
//! [`parse_whole`] and re-parsed on change, relying on derived event ids for
//! idempotence.

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod specstory;

use std::path::Path;

use serde_json::Value;
use shared::storage::event::harness;

use crate::adapter::{self, ParseContext, ParseOutput};
use crate::discover::SourceKind;
use crate::error::Error;

/// The harnesses Engram reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Harness {
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// OpenCode.
    OpenCode,
    /// Cursor (read from SpecStory exports).
    Cursor,
    /// GitHub Copilot in VS Code (read from SpecStory exports).
    Copilot,
    /// SpecStory exports: the sources, and sessions of tools without a name
    /// of their own here.
    SpecStory,
}

impl Harness {
    /// Every harness.
    pub const ALL: [Harness; 7] = [
        Harness::Claude,
        Harness::Codex,
        Harness::Gemini,
        Harness::OpenCode,
        Harness::Cursor,
        Harness::Copilot,
        Harness::SpecStory,
    ];

    /// The harness name used in session keys.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => harness::CLAUDE,
            Harness::Codex => harness::CODEX,
            Harness::Gemini => harness::GEMINI,
            Harness::OpenCode => harness::OPENCODE,
            Harness::Cursor => harness::CURSOR,
            Harness::Copilot => harness::COPILOT,
            Harness::SpecStory => harness::SPECSTORY,
        }
    }

    /// The harnesses whose sessions a scan asked for `self` reads: SpecStory
    /// exports hold Cursor's and Copilot's sessions, and asking for either
    /// reads the exports.
    pub fn covers(self, other: Harness) -> bool {
        self == other
            || matches!(
                (self, other),
                (Harness::SpecStory, Harness::Cursor | Harness::Copilot)
                    | (Harness::Cursor | Harness::Copilot, Harness::SpecStory)
            )
    }

    /// The harness of a name, if known.
    pub fn from_name(name: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// The initial resume state of a JSONL source from its first bytes (pass at
/// least [`adapter::HEAD_BYTES`] when the file is that long). `None` for
/// whole-file sources.
pub fn initial_state(kind: SourceKind, ctx: &ParseContext<'_>, head: &[u8]) -> Option<Value> {
    match kind {
        SourceKind::ClaudeTranscript => Some(adapter::initial_state::<claude::Claude>(ctx, head)),
        SourceKind::CodexRollout => Some(adapter::initial_state::<codex::Codex>(ctx, head)),
        SourceKind::GeminiJsonl => Some(adapter::initial_state::<gemini::Gemini>(ctx, head)),
        SourceKind::SpecStory => Some(specstory::initial_state_value(ctx, head)),
        SourceKind::GeminiLegacy | SourceKind::OpenCodeStorage | SourceKind::OpenCodeDb => None,
    }
}

/// Parses the complete lines of `bytes` (starting at byte `offset` of a JSONL
/// source) from `state`. Whole-file kinds are an [`Error::ResumeState`].
pub fn parse_chunk(
    kind: SourceKind,
    ctx: &ParseContext<'_>,
    bytes: &[u8],
    offset: u64,
    state: &Value,
) -> Result<ParseOutput, Error> {
    match kind {
        SourceKind::ClaudeTranscript => adapter::parse_jsonl::<claude::Claude>(ctx, bytes, offset, state),
        SourceKind::CodexRollout => adapter::parse_jsonl::<codex::Codex>(ctx, bytes, offset, state),
        SourceKind::GeminiJsonl => adapter::parse_jsonl::<gemini::Gemini>(ctx, bytes, offset, state),
        // An export is read to its end: `bytes` must reach it.
        SourceKind::SpecStory => specstory::parse(ctx, bytes, offset, state),
        SourceKind::GeminiLegacy | SourceKind::OpenCodeStorage | SourceKind::OpenCodeDb => Err(Error::ResumeState {
            harness: kind.harness().name(),
            path: ctx.path.to_owned(),
            reason: "whole-file source parsed incrementally".to_owned(),
        }),
    }
}

/// Parses a whole JSONL file from its start (convenience for tests and
/// one-shot imports).
pub fn parse_file_bytes(kind: SourceKind, ctx: &ParseContext<'_>, bytes: &[u8]) -> Result<ParseOutput, Error> {
    match kind {
        SourceKind::GeminiLegacy => Ok(gemini::parse_legacy(ctx, bytes)),
        SourceKind::SpecStory => Ok(specstory::parse_all(ctx, bytes)),
        SourceKind::OpenCodeStorage | SourceKind::OpenCodeDb => Err(Error::ResumeState {
            harness: harness::OPENCODE,
            path: ctx.path.to_owned(),
            reason: "OpenCode sources are directories or databases, not byte streams".to_owned(),
        }),
        _ => {
            let state = initial_state(kind, ctx, bytes).unwrap_or(Value::Null);
            parse_chunk(kind, ctx, bytes, 0, &state)
        }
    }
}

/// Reads and parses a whole-file source at `ctx.path` (Gemini legacy JSON,
/// OpenCode storage directory or database).
pub fn parse_whole(kind: SourceKind, ctx: &ParseContext<'_>) -> Result<ParseOutput, Error> {
    let path = Path::new(ctx.path);
    match kind {
        SourceKind::GeminiLegacy => {
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            Ok(gemini::parse_legacy(ctx, &bytes))
        }
        SourceKind::OpenCodeStorage => Ok(opencode::parse_records(ctx, &opencode::load_storage(path)?)),
        SourceKind::OpenCodeDb => Ok(opencode::parse_records(ctx, &opencode::load_db(path)?)),
        _ => {
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            parse_file_bytes(kind, ctx, &bytes)
        }
    }
}
