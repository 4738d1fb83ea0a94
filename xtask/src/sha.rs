//! A SHA-256 digest as text: 64 lower-case hex digits, checked when it is made, so
//! that no malformed digest from a manifest reaches a comparison or a slice.

use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Hex(String);

/// SHA-256 of no bytes at all: what any program that prints nothing (or only what a
/// rule drops) hashes to, so it can never be a published KAT digest.
pub const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

impl Sha256Hex {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A digest this tool computed (always well formed).
    pub fn computed(hex: String) -> Sha256Hex {
        debug_assert!(hex.len() == 64);
        Sha256Hex(hex)
    }

    /// The first 16 digits, for tables.
    pub fn short(&self) -> &str {
        &self.0[..16]
    }
}

impl TryFrom<String> for Sha256Hex {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Sha256Hex(s.to_ascii_lowercase()))
        } else {
            Err(format!("{s:?} is not a SHA-256 (64 hex digits)"))
        }
    }
}

impl std::str::FromStr for Sha256Hex {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Sha256Hex::try_from(s.to_owned())
    }
}

impl From<Sha256Hex> for String {
    fn from(s: Sha256Hex) -> String {
        s.0
    }
}

impl PartialEq<str> for Sha256Hex {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl std::fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for Sha256Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_64_hex_digits_make_a_digest() {
        assert!("abc".parse::<Sha256Hex>().is_err());
        assert!("g".repeat(64).parse::<Sha256Hex>().is_err());
        assert!("é".repeat(32).parse::<Sha256Hex>().is_err());
        let d: Sha256Hex = EMPTY.to_ascii_uppercase().parse().unwrap();
        assert_eq!(d.as_str(), EMPTY);
        assert_eq!(d.short(), "e3b0c44298fc1c14");
        assert!(serde_json::from_str::<Sha256Hex>("\"00\"").is_err());
    }
}
