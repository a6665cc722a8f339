//! The decorator against the inner backend's own kernels:
//! - forward with policy `always` (two matmuls) vs `B::interpolate`, all four modes, both
//!   `align_corners`, many shapes: within 1e-6 scaled error in f32, nearest bit-exact;
//! - forward under the default policy on CPU devices: byte-identical to `B`;
//! - backward vs the native backward where one exists (nearest on ndarray and wgpu; bilinear
//!   and bicubic on flex).

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::{
    DeterministicBackend, DeterministicConfig, ModeSet, RewritePolicy, WeightLayout,
};
use burn_deterministic_suite::harness::{configured, to_f64, uniform, Resize};
use burn_deterministic_suite::metrics::max_scaled_error;

/// (input NCHW, output size): 1×1, from and to 1, up, down, odd, non-square, mixed up/down,
/// same size, batch × channels.
const SHAPES: &[([usize; 4], [usize; 2])] = &[
    ([1, 1, 1, 1], [1, 1]),
    ([1, 1, 1, 1], [5, 3]),
    ([1, 1, 4, 6], [1, 1]),
    ([1, 1, 1, 6], [4, 1]),
    ([2, 3, 8, 8], [16, 16]),
    ([2, 3, 16, 16], [7, 5]),
    ([1, 2, 5, 7], [11, 3]),
    ([1, 1, 13, 64], [29, 17]),
    ([3, 4, 9, 12], [9, 12]),
    ([1, 3, 10, 15], [40, 60]),
];

const MODES: [InterpolateMode; 4] = [
    InterpolateMode::Nearest,
    InterpolateMode::Bilinear,
    InterpolateMode::Bicubic,
    InterpolateMode::Lanczos3,
];

fn always() -> DeterministicConfig {
    DeterministicConfig::default()
        .with_policy(RewritePolicy::Always)
        .with_modes(ModeSet::all())
}

/// `always` with banded weights in blocks of 8 outputs: every shape below then has several
/// blocks per axis, with uniform (unfolded) windows where the supports allow and gathered
/// ones where they do not.
fn always_banded() -> DeterministicConfig {
    always()
        .with_layout(WeightLayout::Banded)
        .with_block_size(8)
}

/// One (shape, mode, align_corners) problem with its reproducible input.
struct Case {
    x: Vec<f64>,
    shape: [usize; 4],
    output_size: [usize; 2],
    options: InterpolateOptions,
}

impl Case {
    fn f32(&self) -> Resize<'_> {
        Resize {
            x: &self.x,
            shape: self.shape,
            output_size: self.output_size,
            options: self.options.clone(),
            dtype: DType::F32,
        }
    }
}

/// Every (shape, mode, align_corners) problem, with reproducible f32 inputs.
fn problems() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(shape, size)) in SHAPES.iter().enumerate() {
        for mode in MODES {
            for align_corners in [false, true] {
                let x = uniform(1000 + i as u64, shape.iter().product());
                out.push(Case {
                    x,
                    shape,
                    output_size: size,
                    options: InterpolateOptions::new(mode.clone())
                        .with_align_corners(align_corners),
                });
            }
        }
    }
    out
}

fn forward_matches_native<B: Backend>(device: &B::Device, config: DeterministicConfig) {
    let mut worst = 0.0f64;
    let mut count = 0;
    let layout = config.layout;
    configured(config, || {
        for case in problems() {
            let problem = case.f32();
            let Case {
                shape,
                output_size,
                ref options,
                ..
            } = case;
            let native = problem.forward::<B>(device);
            let ours = problem.forward::<DeterministicBackend<B>>(device);
            assert_eq!(ours.shape, native.shape);
            if matches!(options.mode, InterpolateMode::Nearest) {
                assert_eq!(
                    ours.as_bytes(),
                    native.as_bytes(),
                    "nearest not bit-exact: {shape:?} -> {output_size:?}"
                );
            }
            let err = max_scaled_error(&to_f64(ours), &to_f64(native));
            assert!(
                err <= 1e-6,
                "{options:?} {shape:?} -> {output_size:?}: error {err:e}"
            );
            worst = worst.max(err);
            count += 1;
        }
    });
    assert_eq!(count, SHAPES.len() * 8);
    eprintln!(
        "{}: matmul forward ({layout:?}) vs native, worst scaled error {worst:.2e}",
        std::any::type_name::<B>()
    );
}

/// Under the default policy a CPU device keeps `B`'s own forward, byte for byte.
fn cpu_forward_is_byte_identical<B: Backend>(device: &B::Device) {
    configured(DeterministicConfig::default(), || {
        for case in problems() {
            let problem = case.f32();
            let native = problem.forward::<B>(device);
            let ours = problem.forward::<DeterministicBackend<B>>(device);
            assert_eq!(ours.as_bytes(), native.as_bytes(), "{problem:?}");
        }
    });
}

/// The matmul adjoint against `B`'s native backward for the modes that have one.
fn backward_matches_native<A, D>(device: &A::Device, modes: &[InterpolateMode])
where
    A: AutodiffBackend,
    D: AutodiffBackend<Device = A::Device>,
{
    let mut worst = 0.0f64;
    configured(always(), || {
        for case in problems() {
            if !modes
                .iter()
                .any(|m| std::mem::discriminant(m) == std::mem::discriminant(&case.options.mode))
            {
                continue;
            }
            let problem = case.f32();
            let Case {
                shape,
                output_size,
                ref options,
                ..
            } = case;
            let g = uniform(7, problem.output_shape().iter().product());
            let (y_native, dx_native) = problem.forward_backward::<A>(&g, device);
            let (y_ours, dx_ours) = problem.forward_backward::<D>(&g, device);
            let err =
                max_scaled_error(&y_ours, &y_native).max(max_scaled_error(&dx_ours, &dx_native));
            assert!(
                err <= 1e-6,
                "{options:?} {shape:?} -> {output_size:?}: error {err:e}"
            );
            worst = worst.max(err);
        }
    });
    eprintln!(
        "{}: adjoint vs native backward, worst scaled error {worst:.2e}",
        std::any::type_name::<A>()
    );
}

#[cfg(feature = "ndarray")]
mod ndarray {
    use super::*;
    use burn::backend::ndarray::{NdArray, NdArrayDevice};
    use burn::backend::Autodiff;

    #[test]
    fn matmul_forward_matches_native_ndarray() {
        forward_matches_native::<NdArray>(&NdArrayDevice::Cpu, always());
    }

    #[test]
    fn default_policy_keeps_ndarray_forward_byte_identical() {
        cpu_forward_is_byte_identical::<NdArray>(&NdArrayDevice::Cpu);
    }

    #[test]
    fn nearest_adjoint_matches_native_backward_ndarray() {
        backward_matches_native::<Autodiff<NdArray>, Autodiff<DeterministicBackend<NdArray>>>(
            &NdArrayDevice::Cpu,
            &[InterpolateMode::Nearest],
        );
    }
}

#[cfg(feature = "flex")]
mod flex {
    use super::*;
    use burn::backend::flex::{Flex, FlexDevice};
    use burn::backend::Autodiff;

    #[test]
    fn matmul_forward_matches_native_flex() {
        forward_matches_native::<Flex>(&FlexDevice, always());
    }

    #[test]
    fn banded_matmul_forward_matches_native_flex() {
        forward_matches_native::<Flex>(&FlexDevice, always_banded());
    }

    #[test]
    fn default_policy_keeps_flex_forward_byte_identical() {
        cpu_forward_is_byte_identical::<Flex>(&FlexDevice);
    }

    #[test]
    fn adjoint_matches_flex_native_backward() {
        backward_matches_native::<Autodiff<Flex>, Autodiff<DeterministicBackend<Flex>>>(
            &FlexDevice,
            &[
                InterpolateMode::Nearest,
                InterpolateMode::Bilinear,
                InterpolateMode::Bicubic,
            ],
        );
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use super::*;
    use burn::backend::{Autodiff, Wgpu};
    use burn_deterministic_suite::wgpu_setup::test_device;

    #[test]
    fn matmul_forward_matches_native_wgpu() {
        let device = test_device();
        forward_matches_native::<Wgpu>(&device, always());
    }

    /// The banded forward's windows are unfolded views, permuted, fed to CubeCL's matmul.
    #[test]
    fn banded_matmul_forward_matches_native_wgpu() {
        let device = test_device();
        forward_matches_native::<Wgpu>(&device, always_banded());
    }

    #[test]
    fn nearest_adjoint_matches_native_backward_wgpu() {
        let device = test_device();
        backward_matches_native::<Autodiff<Wgpu>, Autodiff<DeterministicBackend<Wgpu>>>(
            &device,
            &[InterpolateMode::Nearest],
        );
    }
}
