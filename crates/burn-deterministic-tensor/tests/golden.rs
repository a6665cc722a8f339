//! The PyTorch golden vectors (forward `y`, gradient `dx = ∂ sum(y·g)/∂x`) through this crate on
//! Burn 0.22.1: flex (every case, f32 and f64) and wgpu on Vulkan (the f32 cases).
//!
//! Error `|a − b| / (1 + |b|)`: f32 forward ≤ 1e-5, gradient ≤ 5e-5; f64 ≤ 1e-11 (the bounds
//! of the Burn 0.21 front door's golden test).

mod common;

use burn::tensor::{DType, Device};
use burn_deterministic_tensor::interpolate;
use common::{golden_cases, max_scaled_error, GoldenCase};

const GOLDEN_CASES: usize = 190;

fn check_golden(device: &Device, selected: impl Fn(&GoldenCase) -> bool) -> usize {
    let cases = golden_cases();
    assert_eq!(cases.len(), GOLDEN_CASES, "golden set incomplete");
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases.iter().filter(|c| selected(c)) {
        let (y, dx) = case.run(device, interpolate);
        let (err_y, err_dx) = (
            max_scaled_error(&y, &case.y),
            max_scaled_error(&dx, &case.dx),
        );
        let (tol_y, tol_dx) = match case.dtype() {
            DType::F64 => (1e-11, 1e-11),
            _ => (1e-5, 5e-5),
        };
        if !(err_y <= tol_y && err_dx <= tol_dx) {
            failures.push(format!("{}: y err {err_y:e}, dx err {err_dx:e}", case.name));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "golden failures:\n{}",
        failures.join("\n")
    );
    checked
}

#[test]
fn golden_flex_every_case() {
    let checked = check_golden(&common::flex(), |_| true);
    assert_eq!(checked, GOLDEN_CASES);
}

#[test]
fn golden_wgpu_vulkan_f32_cases() {
    let checked = check_golden(&common::vulkan(), |case| case.dtype() == DType::F32);
    assert_eq!(checked, GOLDEN_CASES / 2, "half the cases are f32");
}
