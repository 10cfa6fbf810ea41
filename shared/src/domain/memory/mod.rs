//! Memories: how their events fill `memories` and what derives from a text
//! ([`apply`]), the commands every writer shares ([`ops`]), the read
//! queries ([`queries`]), and whether a text stands alone ([`quality`]).

pub mod apply;
pub mod ops;
pub mod quality;
pub mod queries;
