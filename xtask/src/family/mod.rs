//! What a primitive family is: its operations, its size names, its drivers and the page
//! sections it contributes. Commands ask the family; nothing else matches on it.

pub mod replay;

use serde::{Deserialize, Serialize};

/// The family a manifest names (`family = "sig"`); absent means a KEM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FamilyId {
    #[default]
    Kem,
    Sig,
    Hash,
    Kex,
}
