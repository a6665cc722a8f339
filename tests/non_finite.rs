//! Documented semantic difference of the dense matmul path: `0 · NaN = NaN` and `0 · Inf = NaN`,
//! so one non-finite value in a `[n, c]` plane of the input (or of the upstream gradient)
//! reaches every element of that plane's output, where the native kernel only spreads it to
//! the neighbours its taps touch. Other planes are unaffected.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::{DeterministicBackend, DeterministicConfig, RewritePolicy};
use burn_deterministic_suite::harness::{configured, to_f64, uniform, Resize};

const SHAPE: [usize; 4] = [1, 2, 6, 6];
const PLANE: usize = 12 * 12;

fn problem(x: &[f64]) -> Resize<'_> {
    Resize {
        x,
        shape: SHAPE,
        output_size: [12, 12],
        options: InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false),
        dtype: DType::F32,
    }
}

fn x_with_nan() -> Vec<f64> {
    let mut x = uniform(9, 72);
    x[2 * 6 + 3] = f64::NAN; // plane [0, 0], row 2, column 3
    x
}

#[test]
fn native_forward_keeps_a_nan_local() {
    let x = x_with_nan();
    let y = to_f64(problem(&x).forward::<DeterministicBackend<NdArray>>(&NdArrayDevice::Cpu));
    let nan = y[..PLANE].iter().filter(|v| v.is_nan()).count();
    assert!(
        nan > 0 && nan <= 16,
        "native bilinear touches a 4x4 neighbourhood, got {nan}"
    );
    assert!(y[PLANE..].iter().all(|v| v.is_finite()));
}

#[test]
fn matmul_forward_spreads_a_nan_over_its_plane_only() {
    let x = x_with_nan();
    let config = DeterministicConfig::default().with_policy(RewritePolicy::Always);
    let y = configured(config, || {
        to_f64(problem(&x).forward::<DeterministicBackend<NdArray>>(&NdArrayDevice::Cpu))
    });
    assert!(
        y[..PLANE].iter().all(|v| v.is_nan()),
        "whole plane [0, 0] is NaN"
    );
    assert!(
        y[PLANE..].iter().all(|v| v.is_finite()),
        "plane [0, 1] is untouched"
    );
}

#[test]
fn an_infinite_upstream_gradient_spreads_over_its_plane() {
    let x = uniform(10, 72);
    let mut g = uniform(11, 2 * PLANE);
    g[PLANE + 5] = f64::INFINITY; // plane [0, 1]
    let (_, dx) = problem(&x)
        .forward_backward::<Autodiff<DeterministicBackend<NdArray>>>(&g, &NdArrayDevice::Cpu);
    assert!(
        dx[..36].iter().all(|v| v.is_finite()),
        "plane [0, 0] is untouched"
    );
    assert!(
        dx[36..].iter().all(|v| !v.is_finite()),
        "whole plane [0, 1] is non-finite"
    );
}
