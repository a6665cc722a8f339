//! The resize engine: per-axis weights read off the inner kernel, a separable matmul, and the
//! policy that decides when to use them.
//!
//! A 2-D resize of `x: [N, C, H, W]` to `[N, C, P, Q]` is, per axis, a linear map: for every
//! mode Burn implements, `y[n, c] = Wh · x[n, c] · Wwᵀ` with `Wh: [P, H]` and `Ww: [Q, W]`.
//! Its adjoint, the gradient of `sum(y · g)`, is `dx[n, c] = Whᵀ · g[n, c] · Ww`. Both are two
//! GEMMs of the inner backend in a fixed order: no atomics, so the same inputs give the same
//! bits on every run.

use crate::config::{self, DeterministicConfig, RewritePolicy};
use crate::{DeviceClass, DeviceKind, ResizeError};
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, Shape, TensorData, TensorMetadata};

/// `interpolate` through the decorator: `B::interpolate` unless the configuration rewrites the
/// forward (see [`RewritePolicy`]), in which case `Wh · x · Wwᵀ`.
///
/// # Panics
/// With the [`ResizeError`] message when the input cannot be resized (see [`check_resize`]).
pub fn interpolate<B: Backend>(
    x: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B>
where
    B::Device: DeviceClass,
{
    let config = config::current();
    if config.policy == RewritePolicy::Never || !config.modes.contains(&options.mode) {
        return B::interpolate(x, output_size, options);
    }
    let [_, _, in_h, in_w] =
        check_resize::<B>(&x, output_size, &config).unwrap_or_else(|e| panic!("{e}"));
    let device = B::float_device(&x);
    if !rewrites_forward::<B>(config.policy, &device) {
        return B::interpolate(x, output_size, options);
    }
    let dtype = x.dtype();
    let wh_t = axis_weights_transposed::<B>(in_h, output_size[0], &options, dtype, &device);
    let ww_t = axis_weights_transposed::<B>(in_w, output_size[1], &options, dtype, &device);
    separable_product::<B>(B::float_transpose(wh_t), x, ww_t)
}

/// `interpolate_backward` through the decorator: the adjoint `Whᵀ · grad · Ww` of the same
/// weights the forward uses, on every device (the native backward of bilinear, bicubic and
/// lanczos3 panics on most Burn 0.21 backends).
///
/// # Panics
/// With the [`ResizeError`] message when the input cannot be resized or `grad` does not have
/// the output's shape.
pub fn interpolate_backward<B: Backend>(
    x: FloatTensor<B>,
    grad: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B>
where
    B::Device: DeviceClass,
{
    let config = config::current();
    if config.policy == RewritePolicy::Never || !config.modes.contains(&options.mode) {
        return B::interpolate_backward(x, grad, output_size, options);
    }
    let [n, c, in_h, in_w] =
        check_resize::<B>(&x, output_size, &config).unwrap_or_else(|e| panic!("{e}"));
    let expected = vec![n, c, output_size[0], output_size[1]];
    if grad.shape().as_slice() != expected.as_slice() {
        let found = grad.shape().to_vec();
        panic!("{}", ResizeError::GradientShape { expected, found });
    }
    let device = B::float_device(&x);
    let dtype = grad.dtype();
    let wh_t = axis_weights_transposed::<B>(in_h, output_size[0], &options, dtype, &device);
    let ww_t = axis_weights_transposed::<B>(in_w, output_size[1], &options, dtype, &device);
    separable_product::<B>(wh_t, grad, B::float_transpose(ww_t))
}

/// Whether the forward is computed with matmuls under `policy` on `device`.
///
/// `Auto` keeps the native forward on CPU devices, except when the inner backend records
/// gradients (`DeterministicBackend<Autodiff<_>>`): the decorator cannot hand autodiff a
/// backward, so there the forward must be built from ops autodiff can differentiate.
pub fn rewrites_forward<B: Backend>(policy: RewritePolicy, device: &B::Device) -> bool
where
    B::Device: DeviceClass,
{
    match policy {
        RewritePolicy::Never => false,
        RewritePolicy::Always => true,
        RewritePolicy::Auto => {
            device.device_kind() == DeviceKind::Accelerator || B::ad_enabled(device)
        }
    }
}

/// Checks that `x` can be resized to `output_size` under `config`, returning its dims
/// `[N, C, H, W]`. Runs before any kernel, so bad input fails with a message that names the
/// problem instead of deep inside a kernel.
pub fn check_resize<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    config: &DeterministicConfig,
) -> Result<[usize; 4], ResizeError> {
    let shape = x.shape().to_vec();
    let dims: [usize; 4] =
        shape
            .clone()
            .try_into()
            .map_err(|_| ResizeError::NotFourDimensional {
                shape: shape.clone(),
            })?;
    if dims.contains(&0) {
        return Err(ResizeError::EmptyInput { shape });
    }
    if output_size.contains(&0) {
        return Err(ResizeError::EmptyOutput { output_size });
    }
    let dtype = x.dtype();
    let device = B::float_device(x);
    if !accepts_dtype(dtype, B::supports_dtype(&device, dtype)) {
        return Err(ResizeError::UnsupportedDtype {
            dtype,
            backend: B::name(&device),
        });
    }
    for (axis, input, output) in [
        ("height", dims[2], output_size[0]),
        ("width", dims[3], output_size[1]),
    ] {
        let bytes = weight_bytes(input, output, dtype);
        if bytes > config.max_weight_bytes {
            return Err(ResizeError::WeightsTooLarge {
                axis,
                input,
                output,
                bytes,
                limit: config.max_weight_bytes,
            });
        }
    }
    Ok(dims)
}

/// The weights are built in the input's dtype and multiplied by `B`'s matmul: only float dtypes
/// `B` supports qualify. (The backends available today refuse to create the others; the check
/// keeps an exotic inner backend from failing inside a kernel.)
fn accepts_dtype(dtype: DType, supported_by_backend: bool) -> bool {
    dtype.is_float() && supported_by_backend
}

/// Bytes of one axis' weight construction: the `input × input` identity it is read from and the
/// `input × output` matrix itself, whichever is larger (they live one after the other).
fn weight_bytes(input: usize, output: usize, dtype: DType) -> u64 {
    (input as u64) * (input.max(output) as u64) * dtype.size() as u64
}

/// `Wᵀ` of one axis as a `[1, 1, input, output]` tensor of `dtype`: entry `(i, o)` is the weight
/// output `o` gives input `i`.
///
/// Read off `B::interpolate` itself rather than re-derived: channel `c` of the identity
/// `[1, input, input, 1]` is the unit impulse at `c`, and resizing its height to `output`
/// (width 1 → 1, an identity for every mode) gives row `c` of `Wᵀ`. The weights then follow
/// `B`'s coordinate rules (align_corners, border clamping, filter normalisation) exactly, and
/// are in the input's dtype, as the native kernel computes them.
fn axis_weights_transposed<B: Backend>(
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> FloatTensor<B> {
    let mut identity = vec![0.0f32; input * input];
    for i in 0..input {
        identity[i * input + i] = 1.0;
    }
    let data = TensorData::new(identity, [1, input, input, 1]).convert_dtype(dtype);
    let mut identity = B::float_from_data(data, device);
    if identity.dtype() != dtype {
        identity = B::float_cast(identity, dtype.into());
    }
    let weights_t = B::interpolate(identity, [output, 1], options.clone());
    B::float_reshape(weights_t, Shape::new([1, 1, input, output]))
}

/// `left · t · right` for every `[n, c]` plane of `t: [N, C, H, W]`, with `left: [1, 1, P, H]`
/// and `right: [1, 1, W, Q]` broadcast over the batch dims. The two GEMMs run in the order with
/// fewer multiply-adds; either order is a fixed sequence, so results are reproducible.
fn separable_product<B: Backend>(
    left: FloatTensor<B>,
    t: FloatTensor<B>,
    right: FloatTensor<B>,
) -> FloatTensor<B> {
    let [h, w] = [t.shape()[2], t.shape()[3]];
    let [p, q] = [left.shape()[2], right.shape()[3]];
    let rows_first = p * h * w + p * w * q;
    let columns_first = h * w * q + p * h * q;
    if rows_first <= columns_first {
        B::float_matmul(B::float_matmul(left, t), right)
    } else {
        B::float_matmul(left, B::float_matmul(t, right))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_supported_float_dtypes_are_accepted() {
        assert!(accepts_dtype(DType::F32, true));
        assert!(accepts_dtype(DType::F16, true));
        assert!(!accepts_dtype(DType::BF16, false));
        assert!(!accepts_dtype(DType::I32, true));
        let message = ResizeError::UnsupportedDtype {
            dtype: DType::BF16,
            backend: "wgpu<wgsl>".into(),
        }
        .to_string();
        assert_eq!(
            message,
            "burn-deterministic interpolate: dtype BF16 is not a float dtype that backend \
             wgpu<wgsl> supports"
        );
    }

    #[test]
    fn weight_bytes_count_the_larger_of_identity_and_matrix() {
        assert_eq!(weight_bytes(64, 32, DType::F32), 64 * 64 * 4);
        assert_eq!(weight_bytes(64, 256, DType::F64), 64 * 256 * 8);
        assert_eq!(weight_bytes(10, 10, DType::F16), 10 * 10 * 2);
    }
}
