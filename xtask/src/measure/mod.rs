//! Measuring: timing (`bench`), its statistics, the host gate, CPU time read from
//! outside the candidate, the library read from its ELF file (code size, exported
//! names), the symmetric-primitive profile, the environment manifest,
//! external sizes and system profiles.

pub mod bench;
pub mod elf;
pub mod env;
pub mod hostgate;
pub mod profile;
pub mod runner;
pub mod sizes;
pub mod stats;
