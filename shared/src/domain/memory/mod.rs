//! Memories: how their events fill `memories` and what derives from a text
//! ([`apply`]), the commands every writer shares ([`ops`]), and the read
//! queries ([`queries`]).

pub mod apply;
pub mod ops;
pub mod queries;
