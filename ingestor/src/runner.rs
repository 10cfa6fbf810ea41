//! Asking the configured extractor model ([`shared::base::model`]: a preset
//! or the JSON command) about one request and validating its answer
//! strictly ([`crate::external::validate_response`]). Every failure is an
//! [`Error::Extractor`] or [`Error::ExtractorResponse`]; the scanner sets
//! the span aside and carries on ([`crate::spans`]).

use serde_json::Value;
use shared::base::model::{Exchange, ModelClient, NotNow};
use shared::base::paths::Paths;
use shared::base::time::Ts;

use crate::error::Error;
use crate::external::{ExtractorRequest, validate_response};
use crate::extract::Candidate;

pub use shared::base::command::MAX_OUTPUT;

/// The budget's name for extraction.
pub const PURPOSE: &str = "extractor";

/// One extraction call: what went out and came back, and the memories (or
/// why the answer was refused).
#[derive(Debug)]
pub struct Ran {
    /// The exchange with the model.
    pub exchange: Exchange,
    /// The validated candidates.
    pub result: Result<Vec<Candidate>, Error>,
}

/// The request as the model gets it (redacted once more: its turns already are).
pub fn request_value(req: &ExtractorRequest) -> Value {
    let mut v = serde_json::to_value(req).unwrap_or_default();
    shared::storage::redact::redact_value(&mut v);
    v
}

/// Asks `client` about `req`, counted against the extractor's daily budget
/// (the caller holds the single-flight lock); `Err` when the call was not made.
pub fn ask(client: &ModelClient<'_>, paths: &Paths, now: Ts, req: &ExtractorRequest) -> Result<Ran, NotNow> {
    let exchange = client.ask_counted(paths, PURPOSE, now, &req.instructions, &request_value(req))?;
    let result = match &exchange.answer {
        Ok(json) => validate_response(req, json),
        Err(e) => Err(Error::Extractor { command: e.model.clone(), reason: e.reason.clone() }),
    };
    Ok(Ran { exchange, result })
}
