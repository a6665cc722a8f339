//! The PyTorch golden vectors (forward `y`, gradient `dx = ∂ sum(y·g)/∂x`) through this crate on
//! Burn 0.22.1: flex (every case, f32 and f64) and wgpu on Vulkan (the f32 cases).
//!
//! Error `|a − b| / (1 + |b|)`: f32 forward ≤ 1e-5, gradient ≤ 5e-5; f64 ≤ 1e-11 (the bounds
//! of the Burn 0.21 front door's golden test).

mod common;

use burn_deterministic_tensor::interpolate;
use common::{check_golden, GOLDEN_CASES};

#[test]
fn golden_flex_every_case() {
    let checked = check_golden(&common::flex(), interpolate, |_| true);
    assert_eq!(checked, GOLDEN_CASES);
}

#[test]
fn golden_wgpu_vulkan_f32_cases() {
    let checked = check_golden(&common::vulkan(), interpolate, |case| case.is_f32());
    assert_eq!(checked, GOLDEN_CASES / 2, "half the cases are f32");
}
