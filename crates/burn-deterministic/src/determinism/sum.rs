//! A full sum in a fixed order, built from `B`'s per-axis sums.
//!
//! Per-axis reductions (`float_sum_dim`) add each output's inputs in one sequence on every Burn
//! 0.21 backend: CubeCL's reduce without autotune is the `Unit` routine (one unit per output),
//! flex and ndarray loop over the axis. Only the *full* sum is split across threads whose
//! partial results meet in a varying order. So the full sum is taken as a tree of per-axis
//! sums: rows of [`CHUNK`] consecutive elements, then rows of those partial sums, until one
//! value is left. The tree's shape depends on the element count only.

use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, Shape, Slice, TensorMetadata};

/// Elements each output of one level adds in sequence (the engine's, shared with the Burn 0.22
/// front door's fixed-order sum).
pub(crate) const CHUNK: usize = burn_deterministic_core::FIXED_ORDER_ROW;

/// `sum(tensor)` as a fixed tree of `float_sum_dim` calls, shape `[1]` like `B::float_sum`.
///
/// Cost against the native sum: one extra kernel per level (`⌈log₄₀₉₆ n⌉` levels) and, where the
/// element count is not a multiple of [`CHUNK`], one small concatenation per level; the input is
/// read once. A non-contiguous input is made contiguous by the first reshape.
pub(crate) fn fixed_order_sum<B: Backend>(tensor: FloatTensor<B>) -> FloatTensor<B> {
    let elements = tensor.shape().num_elements();
    if elements == 0 {
        return B::float_sum(tensor);
    }
    let mut level = B::float_reshape(tensor, Shape::new([elements]));
    let mut len = elements;
    while len > CHUNK {
        let rows = len / CHUNK;
        let body = B::float_slice(level.clone(), &[Slice::from(0..rows * CHUNK)]);
        let body = B::float_reshape(body, Shape::new([rows, CHUNK]));
        let mut partial = B::float_reshape(B::float_sum_dim(body, 1), Shape::new([rows]));
        if rows * CHUNK < len {
            let tail = B::float_slice(level, &[Slice::from(rows * CHUNK..len)]);
            partial = B::float_cat(vec![partial, B::float_sum_dim(tail, 0)], 0);
        }
        len = partial.shape().num_elements();
        level = partial;
    }
    B::float_sum_dim(level, 0)
}
