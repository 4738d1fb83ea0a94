//! Pages from evidence alone: the Markdown report, the static site, the cross-system
//! comparison.

pub mod compare;
pub mod report;
pub mod site;
