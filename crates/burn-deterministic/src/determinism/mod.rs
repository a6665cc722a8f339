//! The determinism contract beyond resize: ops of a training step whose native kernel on some
//! backend adds in an order that changes between runs, replaced by fixed-order compositions of
//! `B`'s own ops on exactly those devices (see [`crate::OrderHazards`]).
//!
//! | op | native hazard (Burn 0.21) | rewrite | cost against `B`'s op |
//! | --- | --- | --- | --- |
//! | `float_sum`, `q_sum` | CubeCL: partial sums meet in a float `fetch_add`; flex: f32 ≥ 4 Mi elements summed by rayon | [`fixed_order_sum`]: a tree of `float_sum_dim` over rows of 4096 | one more kernel per level of 4096× |
//! | `float_mean` | flex: as its sum (CubeCL's mean is a chain of per-axis reductions: kept) | the fixed-order sum divided by the count, as flex does | as the sum |
//! | `float_scatter_nd`, `int_scatter_nd` | CubeCL: repeated index tuples race (lost updates) | `scatter_nd::in_rounds`: one native scatter per occurrence number | a host read of the indices; one scatter per repeat level |
//! | `deform_conv2d_backward`, input gradient | CubeCL: float `fetch_add` per pixel; ndarray: `AtomicF32` under rayon | `deform_conv::input_grad`: column matmul, then one ordered `scatter_add` per bilinear corner | `B`'s backward still runs for the other gradients; a second column matmul and four scatters |
//!
//! Set `fixed_order_ops: false` in [`crate::DeterministicConfig`] to get `B`'s ops back.
//! Kernels chosen by CubeCL's autotune are a separate matter: see [`check`] and
//! [`use_autotune_cache_dir`].

pub(crate) mod autotune;
pub(crate) mod deform_conv;
pub(crate) mod scatter_nd;
pub(crate) mod sum;

pub use autotune::{check, use_autotune_cache_dir, AutotuneHazard, PinCacheError};

/// The sum of every element of `tensor` as the decorator's fixed-order tree (rows of 4096
/// consecutive elements summed per axis, then rows of the partial sums, until one value is
/// left), on any backend and whatever the device's hazards: the same bits in every run.
///
/// The decorator already uses it for `sum()` where `B`'s full sum is not fixed-order; call it
/// directly to get the same tree everywhere (for example, to compare backends).
///
/// ```rust
/// # #[cfg(feature = "ndarray")] {
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_deterministic::determinism::fixed_order_sum;
///
/// let x = Tensor::<NdArray, 2>::ones([3, 5000], &Default::default());
/// assert_eq!(fixed_order_sum(x).into_scalar(), 15000.0);
/// # }
/// ```
pub fn fixed_order_sum<B: Backend, const D: usize>(
    tensor: burn::tensor::Tensor<B, D>,
) -> burn::tensor::Tensor<B, 1> {
    let primitive = tensor.into_primitive().tensor();
    burn::tensor::Tensor::from_primitive(TensorPrimitive::Float(sum::fixed_order_sum::<B>(
        primitive,
    )))
}

use crate::report::Rewrite;
use crate::{config, DeterministicBackend, OrderHazards};
use burn_backend::ops::{DeformConv2dBackward, DeformConvOptions};
use burn_backend::quantization::QuantPropagation;
use burn_backend::tensor::{FloatTensor, IndexingUpdateOp, IntTensor, QuantizedTensor};
use burn_backend::TensorPrimitive;
use burn_backend::{get_device_settings, Backend, QTensorPrimitive, TensorMetadata};

/// Whether the op guarded by `hazard` is rewritten on `device` as `rewrite`: a hazard there,
/// and `fixed_order_ops` on. Where there is a hazard, the report counts the op either way.
fn rewrites<B: Backend>(
    device: &B::Device,
    rewrite: Rewrite,
    hazard: impl FnOnce(OrderHazards) -> bool,
) -> bool {
    if !hazard(crate::device::backend_profile::<B>(device).order_hazards) {
        return false;
    }
    let applied = config::current().fixed_order_ops;
    crate::report::record::<B>(device, rewrite, applied);
    applied
}

/// `float_sum` through the decorator.
pub(crate) fn float_sum<B: Backend>(tensor: FloatTensor<B>) -> FloatTensor<B> {
    let (dtype, elements) = (tensor.dtype(), tensor.shape().num_elements());
    if rewrites::<B>(&B::float_device(&tensor), Rewrite::FixedOrderSum, |h| {
        h.sum.varies(dtype, elements)
    }) {
        sum::fixed_order_sum::<B>(tensor)
    } else {
        B::float_sum(tensor)
    }
}

/// `float_mean` through the decorator: the fixed-order sum divided by the element count (flex
/// computes its mean as `sum / n` too).
pub(crate) fn float_mean<B: Backend>(tensor: FloatTensor<B>) -> FloatTensor<B> {
    let (dtype, elements) = (tensor.dtype(), tensor.shape().num_elements());
    if rewrites::<B>(&B::float_device(&tensor), Rewrite::FixedOrderMean, |h| {
        h.mean.varies(dtype, elements)
    }) {
        B::float_div_scalar(sum::fixed_order_sum::<B>(tensor), (elements as f64).into())
    } else {
        B::float_mean(tensor)
    }
}

/// `q_sum` through the decorator: Burn's default body (dequantize, sum, requantize when the
/// scheme propagates), with the decorator's sum. Backends whose sum is fixed-order keep theirs.
pub(crate) fn q_sum<B: Backend>(
    tensor: QuantizedTensor<B>,
) -> TensorPrimitive<DeterministicBackend<B>> {
    let device = B::q_device(&tensor);
    let elements = tensor.shape().num_elements();
    let dtype = get_device_settings::<B>(&device).float_dtype;
    if !rewrites::<B>(&device, Rewrite::FixedOrderSum, |h| {
        h.sum.varies(dtype.into(), elements)
    }) {
        return crate::ops::rebrand::outer_primitive(B::q_sum(tensor));
    }
    let scheme = *tensor.scheme();
    let propagation = tensor.propagation();
    let sum = float_sum::<B>(B::dequantize(tensor, dtype));
    match propagation {
        QuantPropagation::Propagate => TensorPrimitive::QFloat(B::quantize_dynamic(sum, &scheme)),
        QuantPropagation::Inhibit => TensorPrimitive::Float(sum),
    }
}

/// `float_scatter_nd` through the decorator.
pub(crate) fn float_scatter_nd<B: Backend>(
    data: FloatTensor<B>,
    indices: IntTensor<B>,
    values: FloatTensor<B>,
    reduction: IndexingUpdateOp,
) -> FloatTensor<B> {
    if rewrites::<B>(&B::float_device(&data), Rewrite::ScatterNdInRounds, |h| {
        h.scatter_nd
    }) {
        scatter_nd::in_rounds::<B, scatter_nd::Float>(data, indices, values, reduction)
    } else {
        B::float_scatter_nd(data, indices, values, reduction)
    }
}

/// `int_scatter_nd` through the decorator.
pub(crate) fn int_scatter_nd<B: Backend>(
    data: IntTensor<B>,
    indices: IntTensor<B>,
    values: IntTensor<B>,
    reduction: IndexingUpdateOp,
) -> IntTensor<B> {
    if rewrites::<B>(&B::int_device(&data), Rewrite::ScatterNdInRounds, |h| {
        h.scatter_nd
    }) {
        scatter_nd::in_rounds::<B, scatter_nd::Int>(data, indices, values, reduction)
    } else {
        B::int_scatter_nd(data, indices, values, reduction)
    }
}

/// `deform_conv2d_backward` through the decorator: `B`'s backward for the offset, weight, mask
/// and bias gradients; on devices whose input gradient adds with atomics, that one recomputed
/// in a fixed order by `deform_conv::input_grad`.
pub(crate) fn deform_conv2d_backward<B: Backend>(
    x: FloatTensor<B>,
    offset: FloatTensor<B>,
    weight: FloatTensor<B>,
    mask: Option<FloatTensor<B>>,
    bias: Option<FloatTensor<B>>,
    output_grad: FloatTensor<B>,
    options: DeformConvOptions<2>,
) -> DeformConv2dBackward<DeterministicBackend<B>> {
    let rewrite = rewrites::<B>(&B::float_device(&x), Rewrite::DeformConv2dInputGrad, |h| {
        h.deform_conv2d_input_grad
    });
    let x_shape = x.shape();
    let inputs = rewrite.then(|| {
        (
            offset.clone(),
            weight.clone(),
            mask.clone(),
            output_grad.clone(),
        )
    });
    let native =
        B::deform_conv2d_backward(x, offset, weight, mask, bias, output_grad, options.clone());
    let x_grad = match inputs {
        Some((offset, weight, mask, output_grad)) => {
            deform_conv::input_grad::<B>(x_shape, offset, weight, mask, output_grad, &options)
        }
        None => native.x_grad,
    };
    DeformConv2dBackward {
        x_grad,
        offset_grad: native.offset_grad,
        weight_grad: native.weight_grad,
        mask_grad: native.mask_grad,
        bias_grad: native.bias_grad,
    }
}
