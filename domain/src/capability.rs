//! A reporter's capability: the secret in their private tracking link.
//!
//! The secret travels only in the URL fragment and a request header; the desk stores only its
//! SHA-256 and compares hashes in constant time.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::ConstantTimeEq;

/// Bytes of randomness in a capability (256 bits; the floor is 128).
pub const CAPABILITY_BYTES: usize = 32;

/// Why a presented capability string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    /// Not the expected length or alphabet.
    #[error("a capability is {expected} lower-case hexadecimal characters")]
    Malformed {
        /// The expected number of characters.
        expected: usize,
    },
}

/// The reporter's secret. Deliberately not `Display`/`Serialize`, and its `Debug` is redacted,
/// so it cannot end up in a log line by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Capability([u8; CAPABILITY_BYTES]);

impl Capability {
    /// Wraps fresh random bytes (the caller owns the random source).
    pub fn from_random(bytes: [u8; CAPABILITY_BYTES]) -> Self {
        Capability(bytes)
    }

    /// Parses the text a reporter's browser sends back.
    pub fn parse(text: &str) -> Result<Self, CapabilityError> {
        let malformed = CapabilityError::Malformed {
            expected: CAPABILITY_BYTES * 2,
        };
        if text.len() != CAPABILITY_BYTES * 2
            || !text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(malformed);
        }
        let mut bytes = [0u8; CAPABILITY_BYTES];
        hex::decode_to_slice(text, &mut bytes).map_err(|_| malformed)?;
        Ok(Capability(bytes))
    }

    /// The text placed in the link's fragment: `/track#<this>`.
    pub fn expose_for_link(&self) -> String {
        hex::encode(self.0)
    }

    /// The only form the desk stores.
    pub fn hash(&self) -> CapabilityHash {
        CapabilityHash(Sha256::digest(self.0).into())
    }
}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Capability(<redacted>)")
    }
}

/// SHA-256 of a capability.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CapabilityHash([u8; 32]);

impl CapabilityHash {
    /// Whether `presented` hashes to this value, compared in constant time.
    pub fn matches(&self, presented: &Capability) -> bool {
        self.0.ct_eq(&presented.hash().0).into()
    }

    /// Hex form for storage.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Debug for CapabilityHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CapabilityHash({})", self.to_hex())
    }
}

impl From<CapabilityHash> for String {
    fn from(hash: CapabilityHash) -> String {
        hash.to_hex()
    }
}

impl TryFrom<String> for CapabilityHash {
    type Error = CapabilityError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(&text, &mut bytes)
            .map_err(|_| CapabilityError::Malformed { expected: 64 })?;
        Ok(CapabilityHash(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(byte: u8) -> Capability {
        Capability::from_random([byte; CAPABILITY_BYTES])
    }

    #[test]
    fn a_capability_round_trips_through_its_link_text() {
        let capability = sample(0xab);
        let text = capability.expose_for_link();
        assert_eq!(text.len(), 64);
        assert_eq!(Capability::parse(&text), Ok(capability));
    }

    #[test]
    fn the_stored_hash_matches_only_the_capability_it_came_from() {
        let stored = sample(1).hash();
        assert!(stored.matches(&sample(1)));
        assert!(!stored.matches(&sample(2)));
    }

    #[test]
    fn the_hash_is_sha256_of_the_secret_bytes() {
        // SHA-256 of 32 zero bytes.
        assert_eq!(
            sample(0).hash().to_hex(),
            "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"
        );
    }

    #[test]
    fn malformed_capabilities_are_refused() {
        for text in ["", "abc", &"g".repeat(64), &"A".repeat(64), &"a".repeat(66)] {
            assert!(Capability::parse(text).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let capability = sample(0xcd);
        let debug = format!("{capability:?}");
        assert!(!debug.contains("cdcd"), "{debug}");
    }

    #[test]
    fn a_hash_survives_json() {
        let hash = sample(7).hash();
        let json = serde_json::to_string(&hash).unwrap();
        assert_eq!(serde_json::from_str::<CapabilityHash>(&json).unwrap(), hash);
    }
}
