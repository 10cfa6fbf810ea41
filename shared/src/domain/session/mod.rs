//! Sessions in the projection: how their events fill `sessions` and
//! `session_events` ([`apply`]), and the read queries of the ingestion side
//! ([`queries`]).

pub mod apply;
pub mod queries;
