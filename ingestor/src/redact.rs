//! Privacy: secret redaction, path exclusion and size caps. The code lives in
//! [`shared::storage::redact`] because the scorer's MCP server writes memory text to the
//! tapes too; this module keeps the ingestor's paths (`crate::redact::…`).

pub use shared::storage::redact::*;
