//! Measuring: timing (`bench`), its statistics, the host gate, CPU time read from
//! outside the candidate, the symmetric-primitive profile, the environment manifest,
//! external sizes and system profiles.

pub mod bench;
pub mod env;
pub mod hostgate;
pub mod profile;
pub mod runner;
pub mod sizes;
pub mod stats;
