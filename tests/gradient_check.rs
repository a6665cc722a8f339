//! The decorator's backward is the exact adjoint of the inner backend's *native* forward:
//! checked in float64 against central finite differences of `L(x) = sum(interpolate(x) · g)`,
//! for all four modes (lanczos3 included, which has no PyTorch twin) and both align_corners.
//! `L` is linear in `x`, so central differences are exact up to rounding.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::{DeterministicBackend, DeterministicConfig, ModeSet};
use burn_deterministic_suite::harness::{configured, to_f64, uniform, Resize};
use burn_deterministic_suite::metrics::max_scaled_error;

type Forward = DeterministicBackend<NdArray>;
type Train = Autodiff<DeterministicBackend<NdArray>>;

#[test]
fn adjoint_matches_finite_differences_of_native_forward_f64() {
    let device = NdArrayDevice::Cpu;
    // Default policy on a CPU device: the forward below is NdArray's own kernel.
    let config = DeterministicConfig::default().with_modes(ModeSet::all());
    let shapes: [([usize; 4], [usize; 2]); 4] = [
        ([1, 2, 4, 5], [7, 3]),
        ([1, 1, 6, 6], [3, 4]),
        ([1, 1, 1, 4], [5, 2]),
        ([2, 1, 3, 3], [3, 3]),
    ];
    let modes = [
        InterpolateMode::Nearest,
        InterpolateMode::Bilinear,
        InterpolateMode::Bicubic,
        InterpolateMode::Lanczos3,
    ];
    let mut worst = 0.0f64;
    let mut checked = 0;
    configured(config, || {
        for (i, (shape, output_size)) in shapes.into_iter().enumerate() {
            for mode in modes.clone() {
                for align_corners in [false, true] {
                    let options =
                        InterpolateOptions::new(mode.clone()).with_align_corners(align_corners);
                    let x = uniform(50 + i as u64, shape.iter().product());
                    let problem = Resize {
                        x: &x,
                        shape,
                        output_size,
                        options,
                        dtype: DType::F64,
                    };
                    let g = uniform(90 + i as u64, problem.output_shape().iter().product());
                    let (_, dx) = problem.forward_backward::<Train>(&g, &device);
                    let loss = |x: &[f64]| -> f64 {
                        let y = to_f64(
                            Resize {
                                x,
                                ..problem.clone()
                            }
                            .forward::<Forward>(&device),
                        );
                        y.iter().zip(&g).map(|(a, b)| a * b).sum()
                    };
                    let h = 1e-3;
                    let numeric: Vec<f64> = (0..x.len())
                        .map(|k| {
                            let (mut plus, mut minus) = (x.clone(), x.clone());
                            plus[k] += h;
                            minus[k] -= h;
                            (loss(&plus) - loss(&minus)) / (2.0 * h)
                        })
                        .collect();
                    let err = max_scaled_error(&dx, &numeric);
                    assert!(
                        err <= 1e-9,
                        "{mode:?} ac={align_corners} {shape:?}->{output_size:?}: {err:e}"
                    );
                    worst = worst.max(err);
                    checked += 1;
                }
            }
        }
    });
    assert_eq!(checked, 32);
    eprintln!("finite differences vs adjoint, worst scaled error {worst:.2e}");
}
