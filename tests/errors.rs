//! Bad input fails at the decorator's entry with a message naming the problem, before any
//! kernel runs.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions, ModuleOps};
use burn::tensor::Tensor;
use burn_deterministic::resize::check_resize;
use burn_deterministic::{Axis, DeterministicBackend, DeterministicConfig, Layout, ResizeError};
use burn_deterministic_suite::harness::configured;

type B = DeterministicBackend<NdArray>;

fn bilinear() -> InterpolateOptions {
    InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false)
}

#[test]
#[should_panic(
    expected = "input must be 4-D [batch, channels, height, width], got shape [2, 3, 4]"
)]
fn three_dimensional_input_is_refused() {
    let x = Tensor::<B, 3>::zeros([2, 3, 4], &NdArrayDevice::Cpu);
    B::interpolate(x.into_primitive().tensor(), [8, 8], bilinear());
}

#[test]
#[should_panic(
    expected = "cannot resize shape [1, 1, 0, 4] to [height, width] [8, 8]: every dimension needs"
)]
fn zero_sized_input_is_refused() {
    let x = Tensor::<B, 4>::zeros([1, 1, 0, 4], &NdArrayDevice::Cpu);
    interpolate(x, [8, 8], bilinear());
}

#[test]
#[should_panic(
    expected = "cannot resize shape [1, 1, 4, 4] to [height, width] [0, 3]: every dimension needs"
)]
fn zero_output_size_is_refused() {
    let x = Tensor::<B, 4>::zeros([1, 1, 4, 4], &NdArrayDevice::Cpu);
    interpolate(x, [0, 3], bilinear());
}

#[test]
#[should_panic(
    expected = "upstream gradient has shape [1, 1, 7, 7], expected the output shape [1, 1, 8, 8]"
)]
fn gradient_of_the_wrong_shape_is_refused() {
    let device = NdArrayDevice::Cpu;
    let x = Tensor::<B, 4>::zeros([1, 1, 4, 4], &device);
    let g = Tensor::<B, 4>::zeros([1, 1, 7, 7], &device);
    B::interpolate_backward(
        x.into_primitive().tensor(),
        g.into_primitive().tensor(),
        [8, 8],
        bilinear(),
    );
}

#[test]
fn weights_over_the_memory_limit_are_refused_before_any_kernel() {
    // `always`: under `auto` this CPU forward would be ndarray's own, which needs no weights.
    let config = DeterministicConfig::default()
        .with_max_weight_bytes(1 << 12)
        .with_policy(burn_deterministic::RewritePolicy::Always);
    let x = Tensor::<B, 4>::zeros([1, 1, 16, 64], &NdArrayDevice::Cpu);
    let err = configured(config.clone(), || check_resize(&x, [32, 32], &bilinear())).unwrap_err();
    assert_eq!(
        err,
        ResizeError::WeightsTooLarge {
            axis: Axis::Width,
            input: 64,
            output: 32,
            // Dense needs 64x32 weights (8 KiB); banded has one block of 32 outputs over all
            // 64 inputs (one uniform window: no gather indices), no smaller, and its adjoint
            // one block of 64 inputs over all 32 outputs (32 gather indices).
            layout: Some(Layout::Banded { block_size: 64 }),
            bytes: 2 * 64 * 32 * 4 + 32 * 8,
            limit: 4096
        }
    );
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        configured(config, || interpolate(x, [32, 32], bilinear()))
    }))
    .expect_err("the resize must be refused");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(
        message.contains(
            "the width weights for 64 -> 32 (banded, blocks of 64) need 16640 bytes, \
             over the limit of 4096 bytes"
        ),
        "{message}"
    );
}

#[test]
fn valid_input_passes_the_check() {
    let x = Tensor::<B, 4>::zeros([2, 3, 5, 7], &NdArrayDevice::Cpu);
    let dims = check_resize(&x, [9, 2], &bilinear()).unwrap();
    assert_eq!(dims, [2, 3, 5, 7]);
}

/// What a resize under `always`, through autodiff, panics with (or `None` if it succeeds).
fn training_resize_panic(output_size: [usize; 2], config: DeterministicConfig) -> Option<String> {
    use burn::backend::Autodiff;
    type Train = Autodiff<B>;
    let x = Tensor::<Train, 4>::zeros([1, 1, 4, 4], &NdArrayDevice::Cpu).require_grad();
    let config = config.with_policy(burn_deterministic::RewritePolicy::Always);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        configured(config, || {
            let _ = interpolate(x, output_size, bilinear());
        })
    }))
    .err()
    .map(|p| burn_deterministic_suite::harness::panic_message(Err::<(), _>(p)))
}

/// Absurd output sizes get the decorator's error, before anything is allocated for them: not a
/// "memory allocation failed" abort, not a "capacity overflow" panic.
#[test]
fn absurd_output_sizes_are_refused_before_any_allocation() {
    let x = Tensor::<B, 4>::zeros([1, 1, 4, 4], &NdArrayDevice::Cpu);
    let check = |size: [usize; 2], config: &DeterministicConfig| {
        configured(config.clone(), || check_resize(&x, size, &bilinear())).unwrap_err()
    };
    let default = DeterministicConfig::default();
    // 2^40 rows: one f32 weight per row is already 4 TiB, over the 256 MiB limit.
    assert_eq!(
        check([1 << 40, 4], &default),
        ResizeError::WeightsTooLarge {
            axis: Axis::Height,
            input: 4,
            output: 1 << 40,
            layout: None,
            bytes: ((1u64 << 40) + 4) * 4,
            limit: 256 << 20,
        }
    );
    // With the limit lifted, the host cannot reserve 2^40 tap windows: an error, not an abort.
    let unlimited = DeterministicConfig::default().with_max_weight_bytes(u64::MAX);
    assert_eq!(
        check([1 << 40, 4], &unlimited),
        ResizeError::HostMemory {
            axis: Axis::Height,
            input: 4,
            output: 1 << 40,
        }
    );
    // An output no platform can address.
    let huge = [usize::MAX / 4, 4];
    assert_eq!(
        check(huge, &unlimited),
        ResizeError::OutputTooLarge {
            shape: vec![1, 1, 4, 4],
            output_size: huge,
        }
    );
    // The same through `interpolate` under autodiff: the decorator's message.
    let message = training_resize_panic([1 << 40, 4], default).expect("refused");
    assert!(
        message.contains("burn-deterministic interpolate: the height weights for 4 -> 1099511627776 (any layout)"),
        "{message}"
    );
    let message = training_resize_panic(huge, unlimited).expect("refused");
    assert!(
        message.contains("burn-deterministic interpolate: resizing [1, 1, 4, 4]")
            && message.contains("larger than this platform can address"),
        "{message}"
    );
}
