//! Mechanism (b), `burn_deterministic_tensor::extension`: Burn 0.22's backend extension with a
//! handwritten autodiff backward. Its forward is Burn's own kernel, bit for bit; its gradient is
//! the adjoint, equal to mechanism (a)'s, in every adjoint layout (dense and banded); the
//! PyTorch golden vectors hold on flex and wgpu.
//! (Training across processes: `tests/training.rs`, kind `ext`.)

mod common;

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_tensor::extension;
use burn_deterministic_tensor::{with_config, DeterministicConfig, WeightLayout};
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
    let f32_cases = |case: &common::GoldenCase| case.is_f32();
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

/// The adjoint's layouts, as configurations: `auto` (the default), dense, banded.
fn auto_layout() -> DeterministicConfig {
    DeterministicConfig::default()
}

fn dense_layout() -> DeterministicConfig {
    DeterministicConfig::default().with_layout(WeightLayout::Dense)
}

fn banded(block_size: usize) -> DeterministicConfig {
    DeterministicConfig::default()
        .with_layout(WeightLayout::Banded)
        .with_block_size(block_size)
}

/// Mechanism (b) with the adjoint's layout set by `layout` (a configuration scope around the
/// forward, which reads the maps for the backward).
fn with_layout(
    x: Tensor<4>,
    options: InterpolateOptions,
    layout: DeterministicConfig,
) -> Tensor<4> {
    with_config(layout, || extension::try_interpolate(x, options))
        .expect("a valid configuration")
        .expect("a valid resize")
}

/// Blocks of 3 outputs: several blocks on every golden axis (the golden sizes are small).
fn banded_3(x: Tensor<4>, options: InterpolateOptions) -> Tensor<4> {
    with_layout(x, options, banded(3))
}

/// Exact windows.
fn banded_1(x: Tensor<4>, options: InterpolateOptions) -> Tensor<4> {
    with_layout(x, options, banded(1))
}

#[test]
fn golden_flex_every_case_banded_adjoint() {
    assert_eq!(
        check_golden(&common::flex(), banded_3, |_| true),
        GOLDEN_CASES
    );
    assert_eq!(
        check_golden(&common::flex(), banded_1, |_| true),
        GOLDEN_CASES
    );
}

#[test]
fn golden_wgpu_vulkan_f32_cases_banded_adjoint() {
    let f32_cases = |case: &common::GoldenCase| case.is_f32();
    assert_eq!(
        check_golden(&common::vulkan(), banded_3, f32_cases),
        GOLDEN_CASES / 2
    );
}

/// `dx` through `layout` for `g`, and the forward's bits.
fn gradient(
    x: &Tensor<4>,
    g: &Tensor<4>,
    options: &InterpolateOptions,
    layout: DeterministicConfig,
) -> (String, Vec<f64>) {
    let x = x.clone().require_grad();
    let y = with_layout(x.clone(), options.clone(), layout);
    let dx = x
        .grad(&(y.clone() * g.clone()).sum().backward())
        .expect("x grad");
    (bits_hash([y.inner()]), values(dx))
}

/// Every banded layout gives the dense layout's gradient, to rounding (the same weights summed
/// in other groups), and the same forward (Burn's kernel): every mode, both alignments, every
/// size pair (up, down, mixed, size one, identity), blocks from exact to wider than the axes.
/// Every mode, both `align_corners`, blocks of 1 to 5 and 64, the shared sizes (non-integer up
/// and down ratios, odd sizes, 1-pixel axes) and the shape that once crashed the 0.21 decorator's
/// banded pass on CubeCL (`[4, 9] → [22, 17]`).
fn check_banded_equals_dense(device: &Device, dtype: DType, tolerance: f64) {
    let sizes = SIZES.into_iter().chain([([4, 9], [22, 17])]);
    for mode in FLEX_MODES {
        for align_corners in [false, true] {
            for (seed, (from, to)) in sizes.clone().enumerate() {
                let options = InterpolateOptions::new(mode.clone())
                    .with_align_corners(align_corners)
                    .with_output_size(to);
                let x = tensor(
                    &uniform(seed as u64, 2 * from[0] * from[1]),
                    [1, 2, from[0], from[1]],
                    dtype,
                    device,
                );
                let g = tensor(
                    &uniform(40 + seed as u64, 2 * to[0] * to[1]),
                    [1, 2, to[0], to[1]],
                    dtype,
                    device,
                );
                let (y_dense, dx_dense) = gradient(&x, &g, &options, dense_layout());
                for block_size in [1, 2, 3, 4, 5, 64] {
                    let (y, dx) = gradient(&x, &g, &options, banded(block_size));
                    assert_eq!(y, y_dense, "{options:?} {from:?}→{to:?}: forward");
                    let error = max_scaled_error(&dx, &dx_dense);
                    assert!(
                        error <= tolerance,
                        "{options:?} {from:?}→{to:?}, blocks of {block_size}: dx differs from \
                         the dense adjoint's by {error:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn flex_banded_adjoint_equals_dense_layout() {
    check_banded_equals_dense(&common::flex(), DType::F64, 1e-12);
}

#[test]
fn wgpu_banded_adjoint_equals_dense_layout() {
    check_banded_equals_dense(&common::vulkan(), DType::F32, 1e-6);
}

/// The positions of `dx` that are not finite.
fn non_finite(dx: &[f64]) -> Vec<usize> {
    (0..dx.len()).filter(|&i| !dx[i].is_finite()).collect()
}

/// The positions of `dx` that are not zero.
fn non_zero(dx: &[f64]) -> Vec<usize> {
    (0..dx.len()).filter(|&i| dx[i] != 0.0).collect()
}

/// Exact windows (`block_size: 1`): a NaN in the gradient reaches exactly the inputs that its
/// output reads (those a one-hot gradient there reaches), no further. Control: the dense layout
/// spreads it (`0 · NaN` is NaN), so the comparison can fail.
#[test]
fn exact_band_keeps_a_nan_gradient_to_its_taps() {
    let device = common::flex();
    for mode in [InterpolateMode::Bilinear, InterpolateMode::Bicubic] {
        let options = InterpolateOptions::new(mode).with_output_size([16, 16]);
        let x = tensor(&uniform(5, 64), [1, 1, 8, 8], DType::F64, &device);
        let at = 5 * 16 + 9;
        let mut one_hot = vec![0.0; 256];
        one_hot[at] = 1.0;
        let mut nan = vec![0.5; 256];
        nan[at] = f64::NAN;
        let [one_hot, nan] =
            [one_hot, nan].map(|g| tensor(&g, [1, 1, 16, 16], DType::F64, &device));
        let (_, taps) = gradient(&x, &one_hot, &options, banded(1));
        let taps = non_zero(&taps);
        assert!(
            !taps.is_empty() && taps.len() <= 16,
            "{options:?}: taps {taps:?}"
        );
        let (_, exact) = gradient(&x, &nan, &options, banded(1));
        assert_eq!(non_finite(&exact), taps, "{options:?}: exact windows");
        let (_, dense) = gradient(&x, &nan, &options, dense_layout());
        assert!(
            non_finite(&dense).len() > taps.len(),
            "{options:?}: the dense control did not spread the NaN"
        );
    }
}

/// `Auto` bands an axis where that saves ≥ 8× the multiply-adds (4× upsamples of 1024- and
/// 256-wide axes; the 256-wide one saves 12.8×, under the forward's 16× bar) and keeps small
/// axes dense: seen through where a NaN in the gradient spreads, which
/// only the layout decides (blocks of 64 confine it to a few windows; dense spreads it along
/// the whole axis).
#[test]
fn auto_layout_bands_large_axes_only() {
    let device = common::flex();
    // How many inputs a NaN at output column `nan_at` of row 1 reaches, per layout, for a
    // `[2, width] → [2, 4 · width]` upsample.
    let spreads = |width: usize, nan_at: usize, seed: u64| {
        let options =
            InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([2, 4 * width]);
        let x = tensor(
            &uniform(seed, 2 * width),
            [1, 1, 2, width],
            DType::F32,
            &device,
        );
        let mut g = vec![0.5; 2 * 4 * width];
        g[4 * width + nan_at] = f64::NAN;
        let g = tensor(&g, [1, 1, 2, 4 * width], DType::F32, &device);
        let spread = |layout| non_finite(&gradient(&x, &g, &options, layout).1).len();
        (
            spread(auto_layout()),
            spread(banded(64)),
            spread(dense_layout()),
        )
    };
    let (auto, band, dense) = spreads(1024, 2000, 6);
    assert_eq!(auto, band, "auto should band the 1024 → 4096 axis");
    assert!(
        band < 200 && dense == 2 * 1024,
        "banded {band}, dense {dense}"
    );
    // A 256 → 1024 axis saves 12.8×: banded too.
    let (auto, band, dense) = spreads(256, 500, 8);
    assert_eq!(auto, band, "auto should band the 256 → 1024 axis");
    assert!(
        band < dense && dense == 2 * 256,
        "banded {band}, dense {dense}"
    );
    // [8, 8] → [16, 16] saves far less than 8×: dense.
    let small = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([16, 16]);
    let x = tensor(&uniform(7, 64), [1, 1, 8, 8], DType::F32, &device);
    let mut g = vec![0.5; 256];
    g[77] = f64::NAN;
    let g = tensor(&g, [1, 1, 16, 16], DType::F32, &device);
    let spread = |layout| non_finite(&gradient(&x, &g, &small, layout).1).len();
    assert_eq!(spread(auto_layout()), spread(dense_layout()));
    assert!(spread(banded(1)) < spread(dense_layout()));
}
