//! Running the optional external extractor through
//! [`shared::base::command::run`]: the request as JSON on stdin, the response as
//! JSON on stdout, within its timeout. Every failure is an
//! [`Error::Extractor`] or [`Error::ExtractorResponse`]; the scanner logs it
//! and carries on.

use shared::base::command::CommandConfig;

use crate::error::Error;
use crate::external::{ExtractorRequest, validate_response};
use crate::extract::Candidate;

pub use shared::base::command::MAX_OUTPUT;

/// Runs the configured extractor on `req` and validates its answer.
pub fn run_extractor(config: &CommandConfig, req: &ExtractorRequest) -> Result<Vec<Candidate>, Error> {
    let out = shared::base::command::run_json(config, req)
        .map_err(|e| Error::Extractor { command: e.command, reason: e.reason })?;
    validate_response(req, &out)
}
