//! Learning from outcomes: how outcome, comparison and training events fill
//! their tables ([`apply`]), the training lists read from the projection
//! ([`data`]), which ended sessions wait to be labelled ([`waiting`]), and
//! when the hooks start a trainer run ([`auto`]).

pub mod apply;
pub mod auto;
pub mod data;
pub mod waiting;
