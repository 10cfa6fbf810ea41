//! Learning from outcomes: how outcome, comparison and training events fill
//! their tables ([`apply`]), the training lists read from the projection
//! ([`data`]), recorded sessions replayed as if the hooks had served them
//! and the lessons given twice ([`history`]), which ended sessions wait to be labelled ([`waiting`]), and
//! when the hooks start a trainer run ([`auto`]).

pub mod apply;
pub mod auto;
pub mod data;
pub mod history;
pub mod waiting;
