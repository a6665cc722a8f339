//! Error metrics and bit-level fingerprints used by the tests and examples.

use sha2::{Digest, Sha256};

/// `max |a − b| / (1 + |b|)`: absolute error near zero, relative error for large values.
/// NaN anywhere gives NaN, which fails every `<=` bound.
pub fn max_scaled_error(actual: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(actual.len(), expected.len(), "length mismatch");
    actual
        .iter()
        .zip(expected)
        .map(|(a, b)| {
            let e = (a - b).abs() / (1.0 + b.abs());
            if e.is_nan() {
                f64::NAN
            } else {
                e
            }
        })
        .fold(0.0, |m: f64, e| {
            if m.is_nan() || e.is_nan() {
                f64::NAN
            } else {
                m.max(e)
            }
        })
}

/// SHA-256 of raw bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The library's parameter hash (`burn_deterministic::train`), for the tests.
pub use burn_deterministic::train::parameter_hash;
