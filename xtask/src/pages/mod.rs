//! Pages from evidence alone: the Markdown report, the static site with its charts,
//! the cross-system comparison.

pub mod chart;
pub mod compare;
pub mod constant_time;
pub mod report;
pub mod site;
