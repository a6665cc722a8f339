//! Fixed-order replacements for the Burn 0.22 ops whose sums meet in a varying order: call
//! these instead of Burn's where the bits must not change between runs.
//!
//! - Reductions: [`sum`], [`mean`], [`l2_norm`], and [`clip_by_norm`] (the clipping of Burn's
//!   `GradientClipping::Norm`); `NormClipped` (feature `optim`) wraps any Burn optimizer with
//!   that clipping.
//! - Indexing ([`gather`], [`select`], [`scatter`], [`select_assign`], [`gather_nd`],
//!   [`scatter_nd`]): Burn's forward, with every sum (the forward of a scatter-add, the backward
//!   of a gather) added as a fixed pairwise tree.
//! - [`deform_conv2d`]: Burn's forward and weight, offset and mask gradients, with a fixed-order
//!   input gradient.
//!
//! Burn 0.22 has no backend type to decorate, so this crate cannot rewrite `Tensor::sum` the way
//! the Burn 0.21 decorator does. On CubeCL backends (wgpu, cuda, rocm) a full `sum()` meets its
//! partial sums in a float `fetch_add`, in the order the workgroups finish, so a loss reduced
//! with it, and the gradient norm Burn's `GradientClipping::Norm` computes with it, can differ
//! in the last bits from run to run. These functions build the same reductions from per-axis
//! sums (`sum_dim`), which add each output's inputs in one sequence: the tree of
//! [`burn_deterministic_core::FIXED_ORDER_ROW`]-element rows that the Burn 0.21 decorator uses.
//! They are differentiable (autodiff sees ordinary tensor ops).
//!
//! ```rust
//! use burn::tensor::{Device, Tensor};
//! use burn_deterministic_tensor::fixed_order;
//!
//! let x = Tensor::<2>::ones([3, 5000], &Device::flex());
//! assert_eq!(fixed_order::sum(x.clone()).into_scalar::<f32>(), 15000.0);
//! assert_eq!(fixed_order::mean(x).into_scalar::<f32>(), 1.0);
//! ```

#[cfg(feature = "optim")]
mod clipping;
mod deform;
mod indexing;
mod rows;

pub use burn_deterministic_core::IndexError;
#[cfg(feature = "optim")]
#[cfg_attr(docsrs, doc(cfg(feature = "optim")))]
pub use clipping::NormClipped;
pub use deform::deform_conv2d;
pub use indexing::{
    gather, gather_nd, scatter, scatter_nd, select, select_assign, try_gather, try_gather_nd,
    try_scatter, try_scatter_nd, try_select, try_select_assign,
};

use crate::report::Rewrite;
use burn::tensor::{DType, FloatDType, Tensor};
use burn_deterministic_core::FIXED_ORDER_ROW;

/// The sum of every element, shape `[1]` like `Tensor::sum`, as a fixed tree of per-axis sums:
/// rows of [`FIXED_ORDER_ROW`] consecutive elements, then rows of the partial sums, until one
/// value is left. The tree's shape depends on the element count only.
///
/// Cost against `Tensor::sum`: one more kernel per level (`⌈log₄₀₉₆ n⌉` levels) and, where the
/// count is not a multiple of the row, one small concatenation per level.
pub fn sum<const D: usize>(tensor: Tensor<D>) -> Tensor<1> {
    crate::report::record(&tensor.device(), Rewrite::FixedOrderSum);
    tree_sum(tensor)
}

/// [`sum`] without counting it in the report (for the functions built on it, which count
/// themselves).
fn tree_sum<const D: usize>(tensor: Tensor<D>) -> Tensor<1> {
    let elements = tensor.shape().num_elements();
    if elements == 0 {
        return tensor.sum();
    }
    let mut level = tensor.reshape([elements]);
    let mut len = elements;
    while len > FIXED_ORDER_ROW {
        let rows = len / FIXED_ORDER_ROW;
        let body = level.clone().narrow(0, 0, rows * FIXED_ORDER_ROW);
        let mut partial = body
            .reshape([rows, FIXED_ORDER_ROW])
            .sum_dim(1)
            .reshape([rows]);
        if rows * FIXED_ORDER_ROW < len {
            let tail = level.narrow(0, rows * FIXED_ORDER_ROW, len - rows * FIXED_ORDER_ROW);
            let tail = tail.sum_dim(0);
            partial = Tensor::cat(vec![partial, tail], 0);
        }
        len = partial.shape().num_elements();
        level = partial;
    }
    level.sum_dim(0)
}

/// The mean of every element: [`sum`] divided by the count.
pub fn mean<const D: usize>(tensor: Tensor<D>) -> Tensor<1> {
    crate::report::record(&tensor.device(), Rewrite::FixedOrderMean);
    let elements = tensor.shape().num_elements();
    tree_sum(tensor).div_scalar(elements as f64)
}

/// The L2 norm of every element, `sqrt(sum(x²))`, with the fixed-order [`sum`].
pub fn l2_norm<const D: usize>(tensor: Tensor<D>) -> Tensor<1> {
    crate::report::record(&tensor.device(), Rewrite::FixedOrderSum);
    tree_sum(tensor.square()).sqrt()
}

/// A gradient scaled down to L2 norm `threshold` when its norm is larger: Burn 0.22's
/// `GradientClipping::Norm(threshold)` (the same formula: the norm in f32 for f16 and bf16,
/// `threshold / (norm + min_positive)` clamped at 1), with the fixed-order [`l2_norm`].
///
/// Burn's optimizers clip each parameter's gradient by its own norm; to get the same clipping
/// deterministically, leave the optimizer's `grad_clipping` unset and apply this to each
/// gradient of the `GradientsParams` before `step` (see the Burn 0.22 guide in the docs).
pub fn clip_by_norm<const D: usize>(grad: Tensor<D>, threshold: f32) -> Tensor<D> {
    let dtype = grad.dtype();
    let grad = match dtype {
        DType::F16 | DType::BF16 => grad.cast(FloatDType::F32),
        _ => grad,
    };
    let min_positive = grad
        .dtype()
        .finfo()
        .unwrap_or(FloatDType::F32.finfo())
        .min_positive;
    let norm = l2_norm(grad.clone());
    let scale = (threshold / norm.add_scalar(min_positive)).clamp_max(1.0);
    grad.mul(scale.unsqueeze()).cast(dtype)
}
