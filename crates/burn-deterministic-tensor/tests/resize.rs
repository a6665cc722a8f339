//! The front door's contract on flex, against Burn 0.22.1's own kernels: forward equal to
//! Burn's `interpolate` for every mode and option, the backward its exact adjoint (also where
//! Burn has none), the dtype kept, Burn's size rules, and bad options refused by name.

mod common;

use burn::nn::interpolate::{Interpolate2dConfig as BurnConfig, InterpolateMode as NnMode};
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_core::Layout;
use burn_deterministic_tensor::{
    cache_stats, interpolate, try_interpolate, Axis, Interpolate2d, Interpolate2dConfig,
    ResizeError,
};
use common::{max_scaled_error, tensor, uniform, values, FLEX_MODES, SIZES};

fn input(seed: u64, [h, w]: [usize; 2], dtype: DType, device: &Device) -> Tensor<4> {
    tensor(&uniform(seed, 2 * 3 * h * w), [2, 3, h, w], dtype, device)
}

#[test]
fn forward_matches_burns_kernel_for_every_mode_and_option() {
    let device = Device::flex();
    for mode in FLEX_MODES {
        for align_corners in [false, true] {
            for (seed, (from, to)) in SIZES.into_iter().enumerate() {
                let options = InterpolateOptions::new(mode.clone())
                    .with_align_corners(align_corners)
                    .with_output_size(to);
                let x = input(seed as u64, from, DType::F64, &device);
                let ours = values(interpolate(x.clone(), options.clone()));
                let burn = values(burn::tensor::module::interpolate(x, options.clone()));
                let error = max_scaled_error(&ours, &burn);
                assert!(
                    error <= 1e-12,
                    "{options:?} {from:?}→{to:?}: error {error:e}"
                );
            }
        }
    }
}

/// For every mode, `align_corners` and size pair: the forward within `forward_tolerance` of
/// Burn's own kernel `A`, and `⟨A x, g⟩ = ⟨x, Aᵀ g⟩` within `adjoint_tolerance` with `Aᵀ g` this
/// crate's backward: the gradient is the adjoint of the map Burn computes. The dot products are
/// taken on the host in f64 (a device sum is atomic on CubeCL).
fn check_forward_and_adjoint(
    device: &Device,
    modes: impl IntoIterator<Item = InterpolateMode>,
    sizes: &[([usize; 2], [usize; 2])],
    dtype: DType,
    [forward_tolerance, adjoint_tolerance]: [f64; 2],
) {
    let dot = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(a, b)| a * b).sum::<f64>();
    for mode in modes {
        for align_corners in [false, true] {
            for (seed, &(from, to)) in sizes.iter().enumerate() {
                let options = InterpolateOptions::new(mode.clone())
                    .with_align_corners(align_corners)
                    .with_output_size(to);
                let x = input(seed as u64, from, dtype, device).require_grad();
                let g_values = uniform(50 + seed as u64, 6 * to[0] * to[1]);
                let g = tensor(&g_values, [2, 3, to[0], to[1]], dtype, device);
                let y = interpolate(x.clone(), options.clone());
                let burn_y = burn::tensor::module::interpolate(x.clone().inner(), options.clone());
                let error = max_scaled_error(&values(y.clone().inner()), &values(burn_y.clone()));
                assert!(
                    error <= forward_tolerance,
                    "{options:?} {from:?}→{to:?}: forward error {error:e}"
                );
                let dx = x.grad(&(y * g.clone()).sum().backward()).expect("x grad");
                let lhs = dot(values(burn_y), values(g.inner()));
                let rhs = dot(values(x.inner()), values(dx));
                let error = (lhs - rhs).abs() / (1.0 + lhs.abs());
                assert!(
                    error <= adjoint_tolerance,
                    "{options:?} {from:?}→{to:?}: ⟨Ax,g⟩ {lhs} vs ⟨x,Aᵀg⟩ {rhs}"
                );
            }
        }
    }
}

/// Flex, f64, every mode it has (lanczos3 has no PyTorch golden vectors, and Burn 0.22.1 no
/// lanczos3 backward on flex).
#[test]
fn backward_is_the_adjoint_of_burns_forward_for_every_mode() {
    let device = Device::flex().autodiff();
    check_forward_and_adjoint(&device, FLEX_MODES, &SIZES, DType::F64, [1e-12, 1e-12]);
}

#[test]
fn the_input_dtype_is_kept() {
    let device = Device::flex();
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let options =
            InterpolateOptions::new(InterpolateMode::Bilinear).with_scale_factor([2.0, 2.0]);
        let x = input(7, [5, 6], dtype, &device);
        let ours = interpolate(x.clone(), options.clone());
        assert_eq!(ours.dtype(), dtype);
        let burn = burn::tensor::module::interpolate(x, options);
        let tolerance = if matches!(dtype, DType::F16 | DType::BF16) {
            1e-2
        } else {
            1e-6
        };
        let error = max_scaled_error(&values(ours), &values(burn));
        assert!(error <= tolerance, "{dtype:?}: error {error:e}");
    }
}

#[test]
fn scale_factors_give_burns_output_size() {
    let device = Device::flex();
    for (scale, from) in [
        ([2.0, 0.5], [5, 7]),
        ([1.5, 3.3], [7, 3]),
        ([0.26, 1.0], [8, 4]),
    ] {
        let options = InterpolateOptions::new(InterpolateMode::Bicubic).with_scale_factor(scale);
        let x = input(3, from, DType::F32, &device);
        let ours = interpolate(x.clone(), options.clone());
        let burn = burn::tensor::module::interpolate(x, options);
        assert_eq!(ours.dims(), burn.dims(), "scale {scale:?} of {from:?}");
    }
}

#[test]
fn bad_options_are_refused_by_name() {
    let device = Device::flex();
    let x = || input(1, [4, 4], DType::F32, &device);
    let mode = || InterpolateOptions::new(InterpolateMode::Bilinear);
    let refused = |options: InterpolateOptions| try_interpolate(x(), options).err();
    assert_eq!(refused(mode()), Some(ResizeError::NoOutputSize));
    assert_eq!(
        refused(InterpolateOptions {
            output_size: Some([8, 8]),
            ..mode().with_scale_factor([2.0, 2.0])
        }),
        Some(ResizeError::BothOutputSizeAndScaleFactor)
    );
    for scale in [
        [0.0, 1.0],
        [-2.0, 2.0],
        [f32::NAN, 1.0],
        [1.0, f32::INFINITY],
    ] {
        assert!(matches!(
            refused(mode().with_scale_factor(scale)),
            Some(ResizeError::InvalidScaleFactor(_))
        ));
    }
    assert_eq!(
        refused(mode().with_scale_factor([0.2, 1.0])),
        Some(ResizeError::Empty {
            shape: vec![2, 3, 4, 4],
            output_size: [0, 4]
        })
    );
    assert_eq!(
        refused(mode().with_output_size([8, 0])),
        Some(ResizeError::Empty {
            shape: vec![2, 3, 4, 4],
            output_size: [8, 0]
        })
    );
    assert_eq!(
        refused(mode().with_output_size([1 << 40, 8])),
        Some(ResizeError::WeightsTooLarge {
            axis: Axis::Height,
            input: 4,
            output: 1 << 40,
            layout: Some(Layout::Dense),
            bytes: 4 << 42,
            limit: burn_deterministic_core::DEFAULT_MAX_WEIGHT_BYTES,
        })
    );
    // `interpolate` panics where Burn's does, with the error's message.
    let panic = std::panic::catch_unwind(|| interpolate(x(), mode())).expect_err("panics");
    let message = panic.downcast_ref::<String>().expect("a message");
    assert!(
        message.contains("set one of `output_size` or `scale_factor`"),
        "{message}"
    );
}

#[test]
fn interpolate2d_is_a_drop_in_for_burns_layer() {
    let device = Device::flex();
    let x = input(9, [6, 10], DType::F32, &device);
    for (mode, size, scale) in [
        (NnMode::Linear, Some([12, 5]), None),
        (NnMode::Cubic, None, Some([0.5, 2.0])),
        (NnMode::Lanczos, Some([7, 7]), None),
        (NnMode::Nearest, None, Some([2.0, 1.5])),
    ] {
        let burn = BurnConfig::new()
            .with_mode(mode.clone())
            .with_output_size(size)
            .with_scale_factor(scale)
            .with_align_corners(false)
            .init();
        let ours = Interpolate2dConfig::new()
            .with_mode(mode.clone())
            .with_output_size(size)
            .with_scale_factor(scale)
            .with_align_corners(false)
            .init();
        let converted = Interpolate2d::from(burn.clone());
        let debug = |options: InterpolateOptions| format!("{options:?}");
        assert_eq!(debug(converted.options()), debug(ours.options()));
        let (a, b) = (burn.forward(x.clone()), ours.forward(x.clone()));
        assert_eq!(a.dims(), b.dims(), "{mode:?}");
        let error = max_scaled_error(&values(a), &values(b));
        assert!(error <= 1e-6, "{mode:?}: error {error:e}");
    }
}

#[test]
fn weights_are_read_once_per_geometry() {
    let device = Device::flex();
    let options = InterpolateOptions::new(InterpolateMode::Bicubic).with_output_size([41, 43]);
    let x = input(4, [19, 23], DType::F32, &device);
    let before = cache_stats();
    let first = values(interpolate(x.clone(), options.clone()));
    let after_first = cache_stats();
    let second = values(interpolate(x, options));
    let after_second = cache_stats();
    assert_eq!(first, second, "a cached map gives the same bits");
    // Other tests run in parallel and share the cache: count at least this test's own lookups.
    assert!(after_first.misses >= before.misses + 2, "two axes built");
    assert!(after_second.hits >= after_first.hits + 2, "both axes found");
}

/// The crate declares which forward kernels flex 0.22.1 has (it never probes them by catching
/// a panic). The declaration must match Burn: for every mode and dtype, Burn's own
/// `interpolate` panics exactly where `try_interpolate` refuses with `NoKernel`, and the
/// error names the mode and dtype (flex has no nearest-exact).
#[test]
fn the_declared_flex_kernels_match_burns() {
    let device = Device::flex();
    let modes = [InterpolateMode::NearestExact]
        .into_iter()
        .chain(FLEX_MODES);
    let mut refused = 0;
    for mode in modes {
        for dtype in [DType::F32, DType::F64] {
            let options = InterpolateOptions::new(mode.clone()).with_output_size([8, 8]);
            let x = input(1, [4, 4], dtype, &device);
            let burn = std::panic::catch_unwind(|| {
                burn::tensor::module::interpolate(x.clone(), options.clone())
            });
            match try_interpolate(x, options) {
                Err(ResizeError::NoKernel {
                    mode: lacking,
                    dtype: found,
                    detail: reason,
                    ..
                }) => {
                    assert!(burn.is_err(), "{mode:?} {dtype:?}: Burn has the kernel");
                    assert_eq!(format!("{lacking:?}"), format!("{mode:?}"));
                    assert_eq!(found, format!("{dtype:?}"));
                    assert!(reason.contains("flex"), "{reason}");
                    refused += 1;
                }
                Ok(_) => assert!(burn.is_ok(), "{mode:?} {dtype:?}: Burn has no kernel"),
                Err(other) => panic!("{mode:?} {dtype:?}: {other}"),
            }
        }
    }
    assert_eq!(refused, 2, "nearest-exact in f32 and f64");
    // An autodiff device of flex is flex too.
    let options = InterpolateOptions::new(InterpolateMode::NearestExact).with_output_size([8, 8]);
    let x = input(1, [4, 4], DType::F32, &device.autodiff());
    assert!(matches!(
        try_interpolate(x, options),
        Err(ResizeError::NoKernel { .. })
    ));
}

/// On wgpu (Vulkan; llvmpipe without a GPU), f32, every mode Burn 0.22.1 has there,
/// nearest-exact included.
#[test]
fn wgpu_forward_and_adjoint_match_burns_kernel_for_every_mode() {
    let modes = [InterpolateMode::NearestExact]
        .into_iter()
        .chain(FLEX_MODES);
    check_forward_and_adjoint(
        &common::vulkan(),
        modes,
        &SIZES[..3],
        DType::F32,
        [1e-6, 1e-5],
    );
}

/// A 4 → 64 bilinear resize under a configuration whose weight limit it exceeds (64 × 4 f32
/// weights = 1 KiB): refused, naming the configured limit.
fn refused_by_the_weight_limit() -> bool {
    let x = input(1, [4, 4], DType::F32, &Device::flex());
    let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([64, 64]);
    matches!(
        try_interpolate(x, options),
        Err(ResizeError::WeightsTooLarge { limit: 512, .. })
    )
}

/// The shared configuration, read as the Burn 0.21 decorator reads it: a scope on this thread,
/// the process configuration, the environment variable (the last two in child processes).
#[test]
fn the_shared_configuration_is_read_scoped_process_wide_and_from_the_environment() {
    use burn_deterministic_tensor::{with_config, DeterministicConfig};
    let small = DeterministicConfig::default().with_max_weight_bytes(512);
    assert!(with_config(small, refused_by_the_weight_limit).expect("a valid configuration"));
    assert!(!refused_by_the_weight_limit(), "the scope ended");

    let json = r#"{"max_weight_bytes": 512}"#;
    let from_env = common::child_output_with(
        "configuration_child",
        "env",
        &[("BURN_DETERMINISTIC_CONFIG", json)],
    );
    assert!(from_env.0, "{}\n{}", from_env.1, from_env.2);
    assert_eq!(common::values_of(&from_env.1, "REFUSED"), ["true"]);
    let process = common::child_output("configuration_child", "process");
    assert!(process.0, "{}\n{}", process.1, process.2);
    assert_eq!(common::values_of(&process.1, "REFUSED"), ["true"]);
}

#[test]
#[ignore = "run by the configuration test in a child process"]
fn configuration_child() {
    let Some(case) = common::child_case() else {
        return;
    };
    if case == "process" {
        let small =
            burn_deterministic_tensor::DeterministicConfig::default().with_max_weight_bytes(512);
        burn_deterministic_tensor::set_config(small).expect("a valid configuration");
    }
    println!("REFUSED={}", refused_by_the_weight_limit());
}
