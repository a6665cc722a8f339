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

/// SHA-256 over the bits of every float parameter of `module`, in visiting order: two models
/// hash equal exactly when all their parameters are bit-identical.
pub fn parameter_hash<B: burn::tensor::backend::Backend, M: burn::module::Module<B>>(
    module: &M,
) -> String {
    struct Collect(Vec<u8>);
    impl<B: burn::tensor::backend::Backend> burn::module::ModuleVisitor<B> for Collect {
        fn visit_float<const D: usize>(
            &mut self,
            param: &burn::module::Param<burn::tensor::Tensor<B, D>>,
        ) {
            self.0.extend_from_slice(param.val().into_data().as_bytes());
        }
    }
    let mut collect = Collect(Vec::new());
    module.visit(&mut collect);
    sha256_hex(&collect.0)
}
