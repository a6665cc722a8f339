//! The resize engine at scale: banded vs dense vs native on large axes, the banded path's
//! measured weight memory, the weight cache under concurrency and a multi-scale loop, the
//! locality option for non-finite inputs, scale factors, and property tests.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::resize::{cache_stats, reset_cache};
use burn_deterministic::{DeterministicBackend, WeightLayout};
use burn_deterministic_suite::harness::{configured, rewrite_all_with, to_f64, uniform, Resize};
use burn_deterministic_suite::metrics::max_scaled_error;
use std::sync::Mutex;

type Det = DeterministicBackend<NdArray>;
type Train = Autodiff<DeterministicBackend<NdArray>>;
const CPU: NdArrayDevice = NdArrayDevice::Cpu;

/// The tests of this file share the process-wide weight cache and read its counters: they run
/// one at a time.
static CACHE_LOCK: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn options(mode: InterpolateMode, align_corners: bool) -> InterpolateOptions {
    InterpolateOptions::new(mode).with_align_corners(align_corners)
}

#[test]
fn banded_dense_and_native_agree_up_to_1024_to_4096() {
    let _serial = serial();
    let cases = [
        (
            [1, 1, 1024, 12],
            [4096, 40],
            options(InterpolateMode::Bilinear, false),
        ),
        (
            [1, 2, 256, 300],
            [96, 1200],
            options(InterpolateMode::Bicubic, true),
        ),
        (
            [1, 1, 200, 24],
            [800, 7],
            options(InterpolateMode::Lanczos3, false),
        ),
        (
            [1, 1, 512, 8],
            [2048, 8],
            options(InterpolateMode::Nearest, false),
        ),
        (
            [2, 1, 4096, 4],
            [1024, 4],
            options(InterpolateMode::Bilinear, true),
        ),
    ];
    for (i, (shape, output_size, options)) in cases.into_iter().enumerate() {
        let x = uniform(700 + i as u64, shape.iter().product());
        let problem = Resize {
            x: &x,
            shape,
            output_size,
            options: options.clone(),
            dtype: DType::F32,
        };
        let g = uniform(800 + i as u64, problem.output_shape().iter().product());
        let native = to_f64(problem.forward::<NdArray>(&CPU));
        let (y_dense, dx_dense) = configured(rewrite_all_with(WeightLayout::Dense, 64), || {
            problem.forward_backward::<Train>(&g, &CPU)
        });
        for block_size in [64, 7] {
            let (y_banded, dx_banded) =
                configured(rewrite_all_with(WeightLayout::Banded, block_size), || {
                    problem.forward_backward::<Train>(&g, &CPU)
                });
            let errors = [
                max_scaled_error(&y_banded, &native),
                max_scaled_error(&y_dense, &native),
                max_scaled_error(&dx_banded, &dx_dense),
            ];
            assert!(
                errors.iter().all(|e| *e <= 1e-6),
                "{options:?} {shape:?}->{output_size:?} block {block_size}: {errors:?}"
            );
        }
    }
}

#[cfg(feature = "flex")]
#[test]
fn banded_backward_matches_flex_native_backward_at_scale() {
    let _serial = serial();
    use burn::backend::flex::{Flex, FlexDevice};
    for (i, mode) in [InterpolateMode::Bilinear, InterpolateMode::Bicubic]
        .into_iter()
        .enumerate()
    {
        let shape = [1, 1, 1024, 6];
        let x = uniform(900 + i as u64, 1024 * 6);
        let problem = Resize {
            x: &x,
            shape,
            output_size: [4096, 9],
            options: options(mode, false),
            dtype: DType::F32,
        };
        let g = uniform(901, 4096 * 9);
        let (y_native, dx_native) = problem.forward_backward::<Autodiff<Flex>>(&g, &FlexDevice);
        let (y, dx) = configured(rewrite_all_with(WeightLayout::Banded, 64), || {
            problem.forward_backward::<Autodiff<DeterministicBackend<Flex>>>(&g, &FlexDevice)
        });
        assert!(max_scaled_error(&y, &y_native) <= 1e-6);
        assert!(max_scaled_error(&dx, &dx_native) <= 1e-6);
    }
}

#[test]
fn banded_weight_memory_is_measured_and_grows_with_taps() {
    let _serial = serial();
    let x = uniform(1, 1024 * 4);
    let problem = Resize {
        x: &x,
        shape: [1, 1, 1024, 4],
        output_size: [4096, 4],
        options: options(InterpolateMode::Bilinear, false),
        dtype: DType::F32,
    };
    reset_cache();
    configured(rewrite_all_with(WeightLayout::Banded, 64), || {
        problem.forward::<Det>(&CPU)
    });
    let banded = cache_stats();
    reset_cache();
    configured(rewrite_all_with(WeightLayout::Dense, 64), || {
        problem.forward::<Det>(&CPU)
    });
    let dense = cache_stats();
    eprintln!("1024->4096 weights: banded kept {} B, peak while building {} B; dense kept {} B, peak {} B",
        banded.bytes, banded.peak_build_bytes, dense.bytes, dense.peak_build_bytes);
    // Stated bound. Forward band: a block of 64 outputs reads 64 · 1024/4096 = 16 inputs plus
    // the bilinear taps' halo (2) plus one for rounding: at most 19 weights per output. Adjoint
    // band: blocks of 16 inputs, each read by at most 19 · 4 outputs: again at most 19 weights
    // per output. Plus each band's gather indices (64 windows, i64) and the tiny 4 -> 4 width
    // map (two bands of 16 weights and 4 indices). About 1/25 of the dense 16 MiB. While
    // building, nothing larger is alive (a few impulse channels: 5 · 5120).
    let bound = (2 * 19 * 4096) * 4 + 64 * (19 + 19 * 4) * 8 + 2 * (16 * 4 + 4 * 8);
    assert!(banded.bytes <= bound, "{} > {bound}", banded.bytes);
    assert!(
        banded.peak_build_bytes <= bound,
        "{} > {bound}",
        banded.peak_build_bytes
    );
    assert_eq!(dense.bytes, (1024 * 4096 + 4 * 4) * 4);
    assert!(dense.peak_build_bytes >= 1024 * 4096 * 4);
}

/// The outside layering differentiates the banded forward (slices, matmuls, concatenation)
/// with autodiff's own ops: the gradient must equal the inside layering's adjoint.
#[test]
fn banded_forward_is_differentiable_outside_autodiff() {
    let _serial = serial();
    let x = uniform(31, 2 * 40 * 30);
    let problem = Resize {
        x: &x,
        shape: [1, 2, 40, 30],
        output_size: [97, 61],
        options: options(InterpolateMode::Bicubic, true),
        dtype: DType::F32,
    };
    let g = uniform(32, 2 * 97 * 61);
    configured(rewrite_all_with(WeightLayout::Banded, 8), || {
        let (y_out, dx_out) =
            problem.forward_backward::<DeterministicBackend<Autodiff<NdArray>>>(&g, &CPU);
        let (y_in, dx_in) = problem.forward_backward::<Train>(&g, &CPU);
        assert!(max_scaled_error(&y_out, &y_in) <= 1e-6);
        assert!(max_scaled_error(&dx_out, &dx_in) <= 1e-6);
    });
}

#[test]
fn weight_limit_switches_to_banded_instead_of_running_out_of_memory() {
    let _serial = serial();
    let x = uniform(2, 2048 * 3);
    let problem = Resize {
        x: &x,
        shape: [1, 1, 2048, 3],
        output_size: [8192, 3],
        options: options(InterpolateMode::Bicubic, false),
        dtype: DType::F32,
    };
    // Dense would need 64 MiB; allow 2 MiB and let `auto` choose.
    let limited = (rewrite_all_with(WeightLayout::Auto, 64))
        .with_max_weight_bytes(2 << 20)
        .with_banded_min_gain(1e9);
    let y = configured(limited, || to_f64(problem.forward::<Det>(&CPU)));
    let native = to_f64(problem.forward::<NdArray>(&CPU));
    assert!(max_scaled_error(&y, &native) <= 1e-6);
}

#[test]
fn cache_serves_8_threads_with_mixed_geometries_within_its_bounds() {
    let _serial = serial();
    reset_cache();
    let bounded = (rewrite_all_with(WeightLayout::Auto, 16))
        .with_cache_max_entries(6)
        .with_cache_max_bytes(64 << 10);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let bounded = bounded.clone();
            std::thread::spawn(move || {
                configured(bounded, || {
                    for step in 0..12 {
                        let k = (t + step) % 6;
                        let shape = [1, 2, 8 + 5 * k, 9 + 3 * k];
                        let x = uniform((t * 100 + step) as u64, shape.iter().product());
                        let modes = [
                            InterpolateMode::Bilinear,
                            InterpolateMode::Bicubic,
                            InterpolateMode::Lanczos3,
                        ];
                        let problem = Resize {
                            x: &x,
                            shape,
                            output_size: [20 + 7 * k, 11 + 2 * k],
                            options: options(modes[k % 3].clone(), k % 2 == 0),
                            dtype: DType::F32,
                        };
                        let ours = to_f64(problem.forward::<Det>(&CPU));
                        let native = to_f64(problem.forward::<NdArray>(&CPU));
                        assert!(
                            max_scaled_error(&ours, &native) <= 1e-6,
                            "thread {t} step {step}"
                        );
                    }
                })
            })
        })
        .collect();
    for t in threads {
        t.join().expect("worker thread");
    }
    let stats = cache_stats();
    eprintln!("{stats:?}");
    assert!(
        stats.peak_entries <= 6 && stats.peak_bytes <= 64 << 10,
        "{stats:?}"
    );
    assert!(
        stats.hits > 0 && stats.misses > 0 && stats.evictions > 0,
        "{stats:?}"
    );
    assert_eq!(
        stats.hits + stats.misses,
        8 * 12 * 2,
        "two axis maps per resize"
    );
}

#[test]
fn multi_scale_training_keeps_the_cache_bounded() {
    let _serial = serial();
    reset_cache();
    let bounded = (rewrite_all_with(WeightLayout::Auto, 32))
        .with_cache_max_entries(16)
        .with_cache_max_bytes(1 << 20);
    let mut seed = 12345u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    configured(bounded, || {
        for step in 0..200 {
            let shape = [1, 1, 4 + next(40), 4 + next(40)];
            let output_size = [4 + next(96), 4 + next(96)];
            let x = uniform(step, shape.iter().product());
            let problem = Resize {
                x: &x,
                shape,
                output_size,
                options: options(InterpolateMode::Bilinear, false),
                dtype: DType::F32,
            };
            let g = uniform(step + 1000, problem.output_shape().iter().product());
            let (_, dx) = problem.forward_backward::<Train>(&g, &CPU);
            assert!(dx.iter().all(|v| v.is_finite()));
            let stats = cache_stats();
            assert!(
                stats.entries <= 16 && stats.bytes <= 1 << 20,
                "step {step}: {stats:?}"
            );
        }
    });
    let stats = cache_stats();
    assert!(
        stats.peak_entries <= 16 && stats.peak_bytes <= 1 << 20 && stats.evictions > 0,
        "{stats:?}"
    );
}

/// Non-finite inputs per path: native spreads a NaN to its taps; dense to the whole plane;
/// banded to the windows of the blocks that read it; banded with `block_size: 1` no further
/// than the native kernel.
#[test]
fn nan_spread_per_path() {
    let _serial = serial();
    let shape = [1, 1, 16, 16];
    let mut x = uniform(5, 256);
    x[7 * 16 + 9] = f64::NAN;
    let count = |y: &[f64]| y.iter().filter(|v| v.is_nan()).count();
    for mode in [
        InterpolateMode::Bilinear,
        InterpolateMode::Bicubic,
        InterpolateMode::Lanczos3,
    ] {
        let problem = Resize {
            x: &x,
            shape,
            output_size: [40, 40],
            options: options(mode.clone(), false),
            dtype: DType::F32,
        };
        let native = to_f64(problem.forward::<NdArray>(&CPU));
        let dense = configured(rewrite_all_with(WeightLayout::Dense, 64), || {
            to_f64(problem.forward::<Det>(&CPU))
        });
        let banded = configured(rewrite_all_with(WeightLayout::Banded, 8), || {
            to_f64(problem.forward::<Det>(&CPU))
        });
        let local = configured(rewrite_all_with(WeightLayout::Banded, 1), || {
            to_f64(problem.forward::<Det>(&CPU))
        });
        assert_eq!(
            count(&dense),
            1600,
            "{mode:?}: dense spreads over the plane"
        );
        assert!(
            count(&banded) < 1600 && count(&banded) >= count(&native),
            "{mode:?}"
        );
        assert!(count(&local) > 0, "{mode:?}");
        for (i, v) in local.iter().enumerate() {
            assert!(
                !v.is_nan() || native[i].is_nan(),
                "{mode:?}: NaN at {i} beyond the native taps"
            );
        }
    }
}

/// The backward of `block_size: 1` is as local as the forward: an infinite upstream gradient
/// at one output reaches exactly the inputs that output reads (those with a non-zero gradient
/// when that output's gradient is 1), where the dense adjoint spreads it over the plane.
#[test]
fn infinite_gradient_spread_per_path() {
    let _serial = serial();
    let shape = [1, 1, 16, 16];
    let x = uniform(6, 256);
    let at = 17 * 40 + 23;
    let one_hot: Vec<f64> = (0..1600).map(|i| if i == at { 1.0 } else { 0.0 }).collect();
    let infinite: Vec<f64> = (0..1600)
        .map(|i| if i == at { f64::INFINITY } else { 0.0 })
        .collect();
    for mode in [
        InterpolateMode::Bilinear,
        InterpolateMode::Bicubic,
        InterpolateMode::Lanczos3,
    ] {
        let problem = Resize {
            x: &x,
            shape,
            output_size: [40, 40],
            options: options(mode.clone(), false),
            dtype: DType::F32,
        };
        let dx = |layout, block, g: &[f64]| {
            configured(rewrite_all_with(layout, block), || {
                problem.forward_backward::<Train>(g, &CPU).1
            })
        };
        let reads: Vec<bool> = dx(WeightLayout::Banded, 1, &one_hot)
            .iter()
            .map(|v| *v != 0.0)
            .collect();
        let reached = |dx: Vec<f64>| -> Vec<bool> { dx.iter().map(|v| !v.is_finite()).collect() };
        assert!(
            reads.iter().any(|r| *r),
            "{mode:?}: the output reads no input"
        );
        assert_eq!(
            reached(dx(WeightLayout::Banded, 1, &infinite)),
            reads,
            "{mode:?}: block_size 1 reaches exactly the inputs the output reads"
        );
        assert!(
            reached(dx(WeightLayout::Dense, 64, &infinite))
                .iter()
                .all(|r| *r),
            "{mode:?}: dense spreads over the plane"
        );
    }
}

#[test]
fn scale_factors_resolve_as_burn_does_and_match_native() {
    let _serial = serial();
    use burn::nn::interpolate::{Interpolate2dConfig, InterpolateMode as NnMode};
    use burn::tensor::Tensor;
    let x = uniform(77, 2 * 3 * 10 * 14);
    for (scale, mode) in [
        ([2.0, 2.0], NnMode::Linear),
        ([1.5, 0.75], NnMode::Cubic),
        ([3.0, 1.0], NnMode::Lanczos),
    ] {
        let layer = Interpolate2dConfig::new()
            .with_scale_factor(Some(scale))
            .with_mode(mode.clone());
        let native: Tensor<NdArray, 4> =
            burn_deterministic_suite::harness::tensor(&x, [2, 3, 10, 14], DType::F32, &CPU);
        let ours: Tensor<Det, 4> =
            burn_deterministic_suite::harness::tensor(&x, [2, 3, 10, 14], DType::F32, &CPU);
        let native = layer.clone().init().forward(native);
        let ours = configured(rewrite_all_with(WeightLayout::Auto, 64), || {
            layer.init().forward(ours)
        });
        assert_eq!(ours.dims(), native.dims(), "{scale:?}");
        let err = max_scaled_error(&to_f64(ours.into_data()), &to_f64(native.into_data()));
        assert!(err <= 1e-6, "{scale:?} {mode:?}: {err:e}");
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn mode(i: usize) -> InterpolateMode {
        [
            InterpolateMode::Nearest,
            InterpolateMode::Bilinear,
            InterpolateMode::Bicubic,
            InterpolateMode::Lanczos3,
        ][i]
            .clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn decorator_forward_matches_native(
            n in 1usize..3, c in 1usize..3, h in 1usize..24, w in 1usize..24,
            oh in 1usize..48, ow in 1usize..48, m in 0usize..4, align_corners: bool,
            banded: bool, block_size in 1usize..20, seed: u64,
        ) {
            let _serial = serial();
            let shape = [n, c, h, w];
            let x = uniform(seed, shape.iter().product());
            let problem = Resize { x: &x, shape, output_size: [oh, ow], options: options(mode(m), align_corners), dtype: DType::F32 };
            let layout = if banded { WeightLayout::Banded } else { WeightLayout::Dense };
            let ours = configured(rewrite_all_with(layout, block_size), || to_f64(problem.forward::<Det>(&CPU)));
            let native = to_f64(problem.forward::<NdArray>(&CPU));
            prop_assert!(max_scaled_error(&ours, &native) <= 1e-6);
        }

        /// `<W x, g> = <x, Wᵀ g>` in f64, for the dense and the banded layout.
        #[test]
        fn adjoint_identity_in_f64(
            h in 1usize..20, w in 1usize..20, oh in 1usize..40, ow in 1usize..40,
            m in 0usize..4, align_corners: bool, banded: bool, block_size in 1usize..12, seed: u64,
        ) {
            let _serial = serial();
            let shape = [1, 2, h, w];
            let x = uniform(seed, shape.iter().product());
            let problem = Resize { x: &x, shape, output_size: [oh, ow], options: options(mode(m), align_corners), dtype: DType::F64 };
            let g = uniform(seed ^ 0xABCD, problem.output_shape().iter().product());
            let layout = if banded { WeightLayout::Banded } else { WeightLayout::Dense };
            let (y, dx) = configured(rewrite_all_with(layout, block_size), || problem.forward_backward::<Train>(&g, &CPU));
            let lhs: f64 = y.iter().zip(&g).map(|(a, b)| a * b).sum();
            let rhs: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
            prop_assert!((lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()), "{lhs} vs {rhs}");
        }
    }
}
