//! Every banded layout the configuration offers runs on CubeCL: wgpu (Vulkan; llvmpipe without a
//! GPU), every mode, both `align_corners`, blocks of 1, 3, 4 and 64, non-integer up and down
//! ratios and odd sizes, forward and backward checked against the dense layout. CubeCL's matmul
//! refuses strided operands that flex and ndarray accept, so a band that passes on the CPU
//! backends can still crash here.
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::Wgpu;
use burn::backend::Autodiff;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::{DeterministicBackend, WeightLayout};
use burn_deterministic_suite::harness::{configured, rewrite_all_with, uniform, Resize};
use burn_deterministic_suite::metrics::max_scaled_error;
use burn_deterministic_suite::wgpu_setup::test_device;

type Train = Autodiff<DeterministicBackend<Wgpu>>;

#[test]
fn wgpu_banded_layouts_match_dense_for_every_mode_block_and_ratio() {
    let device = test_device();
    // `[H, W] -> [P, Q]`: the case that crashed CubeCL's matmul (4 x 9 -> 22 x 17, blocks of
    // 4, align_corners), non-integer up and down ratios, odd sizes, and a 1-pixel axis.
    let sizes = [
        ([4, 9], [22, 17]),
        ([13, 7], [5, 19]),
        ([31, 6], [12, 29]),
        ([1, 11], [3, 4]),
    ];
    let modes = [
        InterpolateMode::Nearest,
        InterpolateMode::Bilinear,
        InterpolateMode::Bicubic,
        InterpolateMode::Lanczos3,
    ];
    let mut checked = 0;
    for (case, ([h, w], output_size)) in sizes.into_iter().enumerate() {
        let shape = [1, 2, h, w];
        let x = uniform(900 + case as u64, shape.iter().product());
        let g = uniform(950 + case as u64, 2 * output_size[0] * output_size[1]);
        for mode in modes.clone() {
            for align_corners in [false, true] {
                let problem = Resize {
                    x: &x,
                    shape,
                    output_size,
                    options: InterpolateOptions::new(mode.clone())
                        .with_align_corners(align_corners),
                    dtype: DType::F32,
                };
                let (y_dense, dx_dense) =
                    configured(rewrite_all_with(WeightLayout::Dense, 64), || {
                        problem.forward_backward::<Train>(&g, &device)
                    });
                for block_size in [1, 3, 4, 64] {
                    let (y, dx) =
                        configured(rewrite_all_with(WeightLayout::Banded, block_size), || {
                            problem.forward_backward::<Train>(&g, &device)
                        });
                    let errors = [
                        max_scaled_error(&y, &y_dense),
                        max_scaled_error(&dx, &dx_dense),
                    ];
                    assert!(
                        errors.iter().all(|e| *e <= 1e-5),
                        "{mode:?} align_corners={align_corners} {shape:?} -> {output_size:?}, \
                         blocks of {block_size}: forward and gradient errors {errors:?}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 4 * 4 * 2 * 4);
}
