//! The backward of mechanism (b): `dx[n, c] = Whᵀ · g[n, c] · Ww`, one pass per axis on the
//! backend's primitives, each axis' map dense or banded.
//!
//! Dense: `W: [output, input]`, one broadcast GEMM. Banded: the band of `Wᵀ` from
//! `burn-deterministic-core` (blocks of inputs, each reading only the outputs whose taps touch
//! them), applied as one GEMM per block on a view of its window of `g`, the small results
//! concatenated in block order: a gather-free, scatter-free fixed sequence of ops, so as
//! deterministic as the dense pass, with `taps × size` multiply-adds instead of `size²`.
//! (Mechanism (a) cannot band: autodiff would differentiate the window cut as a scatter-add.)

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{Shape, Slice};
use burn_deterministic_core::{band_entries, height_first, product, BandShape};
use core::ops::Range;
use std::sync::Arc;

/// How the backward multiplies by one axis' adjoint: what the tensor passed with it holds.
/// (Plumbing of [`super::AdjointInterpolateBackend`]; [`super::try_interpolate`] builds it.)
// Public only because the backend-extension trait's methods take it; not part of the API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub enum AxisAdjoint {
    /// The tensor is the axis' `W: [output, input]`.
    Dense,
    /// The tensor is the band of `Wᵀ`, `[blocks, block, width]`, laid out as the shape says.
    Banded(Arc<BandShape>),
}

impl AxisAdjoint {
    /// The axis' input size (the adjoint's output) and the multiply-adds per column of the
    /// other axis, for `map` (the tensor passed with it).
    fn size_and_macs<T: TensorMetadata>(&self, map: &T) -> (usize, u64) {
        match self {
            AxisAdjoint::Dense => {
                let [output, input] = map.shape().dims::<2>();
                (input, product(&[output, input]))
            }
            AxisAdjoint::Banded(band) => (band.rows, band_entries(band)),
        }
    }
}

/// `Whᵀ · g · Ww` for `g: [N, C, P, Q]`, the axes in the engine's order ([`height_first`]).
pub(super) fn adjoint<B: Backend>(
    g: FloatTensor<B>,
    [height, width]: [FloatTensor<B>; 2],
    [height_map, width_map]: &[AxisAdjoint; 2],
) -> FloatTensor<B> {
    let [_, _, p, q] = g.shape().dims::<4>();
    let (h, height_macs) = height_map.size_and_macs(&height);
    let (w, width_macs) = width_map.size_and_macs(&width);
    let both_dense = matches!(
        (height_map, width_map),
        (AxisAdjoint::Dense, AxisAdjoint::Dense)
    );
    if height_first(height_macs, width_macs, both_dense, [p, q], [h, w]) {
        let g = along::<B>(g, height, height_map, HEIGHT);
        along::<B>(g, width, width_map, WIDTH)
    } else {
        let g = along::<B>(g, width, width_map, WIDTH);
        along::<B>(g, height, height_map, HEIGHT)
    }
}

/// The NCHW dims the maps apply along.
const HEIGHT: usize = 2;
const WIDTH: usize = 3;

/// `Wᵀ` applied along `dim` of `g`.
fn along<B: Backend>(
    g: FloatTensor<B>,
    map: FloatTensor<B>,
    layout: &AxisAdjoint,
    dim: usize,
) -> FloatTensor<B> {
    match layout {
        AxisAdjoint::Dense => {
            let [output, input] = map.shape().dims::<2>();
            if dim == HEIGHT {
                // [1, 1, H, P] · [N, C, P, ·]
                let w_t =
                    B::float_reshape(B::float_transpose(map), Shape::new([1, 1, input, output]));
                B::float_matmul(w_t, g)
            } else {
                // [N, C, ·, Q] · [1, 1, Q, W]
                B::float_matmul(g, B::float_reshape(map, Shape::new([1, 1, output, input])))
            }
        }
        AxisAdjoint::Banded(band) => banded::<B>(g, map, band, dim),
    }
}

/// The band `M: [rows, columns]` (entries `[blocks, block, width]`) applied along `dim` of `t`,
/// whose `columns` entries there become `rows`: per block, one GEMM of its weights on the part
/// of its window inside `t` (a view), then one concatenation; a block that reads nothing gives
/// zeros. Rows past `rows` (the last block's padding) are cut off.
fn banded<B: Backend>(
    t: FloatTensor<B>,
    entries: FloatTensor<B>,
    band: &BandShape,
    dim: usize,
) -> FloatTensor<B> {
    let pieces = (0..band.blocks)
        .map(|k| match band.window_inside(k) {
            None => {
                let mut shape = t.shape();
                shape[dim] = band.block;
                B::float_zeros(shape, &t.device(), t.dtype().into())
            }
            Some((inside, offset)) => {
                let columns = inside.len();
                let window = slice_along::<B>(t.clone(), dim, inside);
                let weights = B::float_slice(
                    entries.clone(),
                    &[
                        Slice::from(k..k + 1),
                        Slice::from(0..band.block),
                        Slice::from(offset..offset + columns),
                    ],
                );
                let weights = B::float_reshape(weights, Shape::new([1, 1, band.block, columns]));
                if dim == HEIGHT {
                    B::float_matmul(weights, window)
                } else {
                    B::float_matmul(window, B::float_transpose(weights))
                }
            }
        })
        .collect();
    let y = B::float_cat(pieces, dim);
    if band.pads_rows() {
        slice_along::<B>(y, dim, 0..band.rows)
    } else {
        y
    }
}

/// `t` restricted to `range` along `dim`.
fn slice_along<B: Backend>(t: FloatTensor<B>, dim: usize, range: Range<usize>) -> FloatTensor<B> {
    let ranges = burn_deterministic_core::ranges_along(&t.shape(), dim, range);
    B::float_slice(t, &ranges.into_iter().map(Slice::from).collect::<Vec<_>>())
}
