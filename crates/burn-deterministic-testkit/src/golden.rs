//! The PyTorch golden vectors for 2-D resize, in the repository's `tests/data/golden/` (copied
//! from the project's shared reference set; see the README there).

use serde::Deserialize;
use std::path::PathBuf;

/// How many cases the set holds (half f32, half f64).
pub const CASES: usize = 190;

/// One case: `y = interpolate(x)`, and `dx`, the gradient of `sum(y · g)` with respect to `x`.
/// Fields as PyTorch names them: `mode` is `"nearest"`, `"bilinear"` or `"bicubic"`, `dtype`
/// `"float32"` or `"float64"`; `align_corners` is absent for nearest.
#[derive(Debug, Clone, Deserialize)]
pub struct GoldenCase {
    pub name: String,
    pub mode: String,
    pub align_corners: Option<bool>,
    pub dtype: String,
    pub input_shape: [usize; 4],
    pub output_shape: [usize; 4],
    pub x: Vec<f64>,
    pub g: Vec<f64>,
    pub y: Vec<f64>,
    pub dx: Vec<f64>,
}

impl GoldenCase {
    /// Whether the case is in f32 (else f64).
    pub fn is_f32(&self) -> bool {
        match self.dtype.as_str() {
            "float32" => true,
            "float64" => false,
            other => panic!("unknown golden dtype {other}"),
        }
    }

    /// The resolved output `[height, width]`.
    pub fn output_size(&self) -> [usize; 2] {
        [self.output_shape[2], self.output_shape[3]]
    }
}

#[derive(Deserialize)]
struct Index {
    cases: Vec<IndexEntry>,
}

#[derive(Deserialize)]
struct IndexEntry {
    file: String,
}

/// The folder of the golden files in the repository.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

/// Every case listed in `index.json`; panics naming the file that is missing or malformed (a
/// test without its data must not pass).
pub fn load_cases() -> Vec<GoldenCase> {
    let dir = dir();
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("golden {file}: {e}"))
    };
    let index: Index = serde_json::from_str(&read("index.json")).expect("golden index parses");
    let cases: Vec<GoldenCase> = index
        .cases
        .iter()
        .map(|entry| {
            serde_json::from_str(&read(&entry.file))
                .unwrap_or_else(|e| panic!("golden {}: {e}", entry.file))
        })
        .collect();
    assert_eq!(cases.len(), CASES, "golden set incomplete");
    cases
}

/// `max |a − b| / (1 + |b|)`: absolute error near zero, relative error for large values, the
/// error the golden tests bound. NaN anywhere gives NaN, which fails every `<=` bound.
pub fn max_scaled_error(actual: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(actual.len(), expected.len(), "length mismatch");
    actual
        .iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, |m: f64, e| {
            if m.is_nan() || e.is_nan() {
                f64::NAN
            } else {
                m.max(e)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_complete_and_half_f32() {
        let cases = load_cases();
        assert_eq!(cases.iter().filter(|c| c.is_f32()).count(), CASES / 2);
        for case in &cases {
            let elements = |shape: [usize; 4]| shape.iter().product::<usize>();
            assert_eq!(case.x.len(), elements(case.input_shape), "{}", case.name);
            assert_eq!(case.y.len(), elements(case.output_shape), "{}", case.name);
            assert_eq!(case.g.len(), case.y.len(), "{}", case.name);
            assert_eq!(case.dx.len(), case.x.len(), "{}", case.name);
        }
    }

    #[test]
    fn the_error_is_scaled() {
        assert_eq!(max_scaled_error(&[1.0, 3.0], &[1.0, 1.0]), 1.0);
        assert!(max_scaled_error(&[f64::NAN, 3.0], &[1.0, 1.0]).is_nan());
        assert!(max_scaled_error(&[1.0, f64::NAN], &[1.0, 1.0]).is_nan());
    }
}
