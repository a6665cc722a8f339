//! Error metrics and bit-level fingerprints used by the tests and examples.

use sha2::{Digest, Sha256};

pub use burn_deterministic_testkit::golden::max_scaled_error;

/// SHA-256 of raw bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The library's parameter hash (`burn_deterministic::train`), for the tests.
pub use burn_deterministic::train::parameter_hash;
