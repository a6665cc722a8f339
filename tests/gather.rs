//! The gather decomposition used as a benchmark baseline computes the same resize as the native
//! kernel (forward), and its autodiff backward matches the decorator's adjoint.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Tensor};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::gather::gather_resize;
use burn_deterministic_suite::harness::{tensor, to_f64, uniform};
use burn_deterministic_suite::metrics::max_scaled_error;

#[test]
fn gather_decomposition_matches_native_forward_and_decorator_backward() {
    let device = NdArrayDevice::Cpu;
    for mode in [InterpolateMode::Bilinear, InterpolateMode::Bicubic] {
        for align_corners in [false, true] {
            for (shape, size) in [
                ([2, 3, 9, 13], [20, 7]),
                ([1, 2, 16, 16], [64, 64]),
                ([1, 1, 1, 5], [3, 11]),
            ] {
                let options =
                    InterpolateOptions::new(mode.clone()).with_align_corners(align_corners);
                let x = uniform(3, shape.iter().product());
                let native: Tensor<NdArray, 4> = tensor(&x, shape, DType::F32, &device);
                let expected = to_f64(interpolate(native, size, options.clone()).into_data());
                type A = Autodiff<NdArray>;
                let xg: Tensor<A, 4> =
                    tensor::<A, 4>(&x, shape, DType::F32, &device).require_grad();
                let g = uniform(4, shape[0] * shape[1] * size[0] * size[1]);
                let gt: Tensor<A, 4> = tensor(
                    &g,
                    [shape[0], shape[1], size[0], size[1]],
                    DType::F32,
                    &device,
                );
                let y = gather_resize(xg.clone(), size, &options);
                let got = to_f64(y.clone().into_data());
                let dx = to_f64(xg.grad(&(y * gt).backward()).unwrap().into_data());
                let err = max_scaled_error(&got, &expected);
                assert!(
                    err <= 1e-5,
                    "{options:?} {shape:?}->{size:?}: forward {err:e}"
                );
                type D = Autodiff<DeterministicBackend<NdArray>>;
                let xd: Tensor<D, 4> =
                    tensor::<D, 4>(&x, shape, DType::F32, &device).require_grad();
                let gd: Tensor<D, 4> = tensor(
                    &g,
                    [shape[0], shape[1], size[0], size[1]],
                    DType::F32,
                    &device,
                );
                let yd = interpolate(xd.clone(), size, options.clone());
                let dx_ref = to_f64(xd.grad(&(yd * gd).backward()).unwrap().into_data());
                let err = max_scaled_error(&dx, &dx_ref);
                assert!(
                    err <= 1e-5,
                    "{options:?} {shape:?}->{size:?}: backward {err:e}"
                );
            }
        }
    }
}
