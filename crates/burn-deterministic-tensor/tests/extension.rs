//! Mechanism (b), `burn_deterministic_tensor::extension`: Burn 0.22's backend extension with a
//! handwritten autodiff backward. Its forward is Burn's own kernel, bit for bit; its gradient is
//! the adjoint, equal to mechanism (a)'s; the PyTorch golden vectors hold on flex and wgpu.
//! (Training across processes: `tests/training.rs`, kind `ext`.)

mod common;

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_tensor::extension;
use common::{
    bits_hash, check_golden, max_scaled_error, tensor, uniform, values, FLEX_MODES, GOLDEN_CASES,
    SIZES,
};

#[test]
fn golden_flex_every_case() {
    assert_eq!(
        check_golden(&common::flex(), extension::interpolate, |_| true),
        GOLDEN_CASES
    );
}

#[test]
fn golden_wgpu_vulkan_f32_cases() {
    let f32_cases = |case: &common::GoldenCase| case.dtype() == DType::F32;
    assert_eq!(
        check_golden(&common::vulkan(), extension::interpolate, f32_cases),
        GOLDEN_CASES / 2
    );
}

/// The forward is Burn's kernel (the same bits), the gradient equals mechanism (a)'s.
fn check_against_burn_and_mechanism_a(device: &Device, dtype: DType, tolerance: f64) {
    for mode in FLEX_MODES {
        for align_corners in [false, true] {
            for (seed, (from, to)) in SIZES.into_iter().enumerate().take(4) {
                let options = InterpolateOptions::new(mode.clone())
                    .with_align_corners(align_corners)
                    .with_output_size(to);
                let shape = [2, 3, from[0], from[1]];
                let x: Tensor<4> = tensor(
                    &uniform(seed as u64, 6 * from[0] * from[1]),
                    shape,
                    dtype,
                    device,
                );
                let g = tensor(
                    &uniform(70 + seed as u64, 6 * to[0] * to[1]),
                    [2, 3, to[0], to[1]],
                    dtype,
                    device,
                );
                let burn = burn::tensor::module::interpolate(x.clone().inner(), options.clone());
                let gradient = |resize: fn(Tensor<4>, InterpolateOptions) -> Tensor<4>| {
                    let x = x.clone().require_grad();
                    let y = resize(x.clone(), options.clone());
                    let dx = x
                        .grad(&(y.clone() * g.clone()).sum().backward())
                        .expect("x grad");
                    (y.inner(), dx)
                };
                let (y, dx) = gradient(extension::interpolate);
                let (_, dx_a) = gradient(burn_deterministic_tensor::interpolate);
                assert_eq!(
                    bits_hash([y]),
                    bits_hash([burn]),
                    "{options:?} {from:?}→{to:?}: forward"
                );
                let error = max_scaled_error(&values(dx), &values(dx_a));
                assert!(
                    error <= tolerance,
                    "{options:?} {from:?}→{to:?}: dx differs from (a) by {error:e}"
                );
            }
        }
    }
}

#[test]
fn flex_forward_is_burns_and_gradient_is_mechanism_a_s() {
    check_against_burn_and_mechanism_a(&common::flex(), DType::F64, 1e-12);
}

#[test]
fn wgpu_forward_is_burns_and_gradient_is_mechanism_a_s() {
    check_against_burn_and_mechanism_a(&common::vulkan(), DType::F32, 1e-6);
}

#[test]
fn bad_options_are_refused_by_name() {
    let device = Device::flex();
    let x = tensor(&uniform(1, 16), [1, 1, 4, 4], DType::F32, &device);
    let options = InterpolateOptions::new(InterpolateMode::Bilinear);
    assert_eq!(
        extension::try_interpolate(x, options).err(),
        Some(burn_deterministic_tensor::ResizeError::NoOutputSize)
    );
}
