//! Device application: one axis' map as tensors of the inner backend, and the passes that
//! multiply an NCHW tensor by it along dim 2 (height) or 3 (width), forward (`W`) or adjoint
//! (`Wᵀ`). The geometry and the cost come from `burn-deterministic-core`; what is here only
//! follows them.
//!
//! Dense: one batched GEMM with `Wᵀ: [1, 1, in, out]` broadcast over N and C. Banded: each
//! block's window is cut out of the input — as a view of the zero-padded input (`unfold`) when
//! the windows start at a uniform step, else by one `select` of the window columns (a read: no
//! atomics) — and multiplied by the block's weights in one batched GEMM
//! `[K, block, width] · [K, width, ·]`, or one GEMM per window view and a concatenation (see
//! [`Band::apply`] for which). Every pass is a fixed sequence of plain ops: deterministic.

use super::weights::read_axis;
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::{FloatTensor, IntElem, IntTensor};
use burn_backend::{Backend, DType, Shape, Slice, TensorData, TensorMetadata};
use burn_deterministic_core::{band_shapes, BandShape, Cost, Layout, Stride};
use core::ops::Range;

/// The NCHW dimension a map applies along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dim {
    Height,
    Width,
}

impl Dim {
    fn index(self) -> usize {
        match self {
            Dim::Height => 2,
            Dim::Width => 3,
        }
    }
}

/// One axis' linear map on the device, with its cost.
#[derive(Debug, Clone)]
pub(crate) struct AxisMap<B: Backend> {
    matrix: Matrix<B>,
    cost: Cost,
}

#[derive(Debug, Clone)]
enum Matrix<B: Backend> {
    /// `Wᵀ` as one `[1, 1, in, out]` tensor, broadcast over N and C by the matmul.
    Dense { weights_t: FloatTensor<B> },
    /// `W` and `Wᵀ` as bands (boxed: a band is much larger than a tensor handle).
    Banded {
        forward: Box<Band<B>>,
        adjoint: Box<Band<B>>,
    },
}

impl<B: Backend> AxisMap<B> {
    /// Builds the map of one axis from `B`'s kernel. Also returns the peak bytes of weight
    /// tensors alive on the device at once while building (the cost model's count).
    pub fn build(
        layout: Layout,
        input: usize,
        output: usize,
        options: &InterpolateOptions,
        dtype: DType,
        device: &B::Device,
    ) -> (Self, u64) {
        let weights = read_axis::<B>(input, output, options, dtype, device);
        let (matrix, cost) = match layout {
            Layout::Dense => {
                let values: Vec<f64> = (0..input)
                    .flat_map(|i| (0..output).map(move |o| (i, o)))
                    .map(|(i, o)| weights.get(o, i))
                    .collect();
                let data = TensorData::new(values, [1, 1, input, output]);
                let weights_t = float_in::<B>(data, dtype, device);
                let cost = Cost::dense(input, output, dtype.size());
                (Matrix::Dense { weights_t }, cost)
            }
            Layout::Banded { block_size } => {
                let (f, a) = band_shapes(block_size, input, output, &weights.supports());
                let cost = Cost::banded(&f, &a, dtype.size());
                let forward = Band::upload(f, |o, i| weights.get(o, i), dtype, device);
                let adjoint = Band::upload(a, |i, o| weights.get(o, i), dtype, device);
                let matrix = Matrix::Banded {
                    forward: Box::new(forward),
                    adjoint: Box::new(adjoint),
                };
                (matrix, cost)
            }
        };
        let peak = cost.kept_bytes.max(weights.read_bytes);
        (Self { matrix, cost }, peak)
    }

    pub fn cost(&self) -> Cost {
        self.cost
    }

    pub fn is_dense(&self) -> bool {
        matches!(self.matrix, Matrix::Dense { .. })
    }

    /// The forward band, when it has uniform windows (see [`Band::apply_transposed`]).
    pub fn uniform_forward(&self) -> Option<&Band<B>> {
        match &self.matrix {
            Matrix::Banded { forward, .. } if forward.shape.stride.is_some() => {
                Some(forward.as_ref())
            }
            _ => None,
        }
    }

    /// `W` applied along `dim` of `t` (the forward resize of that axis).
    pub fn forward(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        match &self.matrix {
            Matrix::Dense { weights_t } => multiply_dense::<B>(t, weights_t.clone(), dim, false),
            Matrix::Banded { forward, .. } => forward.apply(t, dim),
        }
    }

    /// `Wᵀ` applied along `dim` of `g` (the adjoint: gradient of the forward).
    pub fn adjoint(&self, g: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        match &self.matrix {
            Matrix::Dense { weights_t } => multiply_dense::<B>(g, weights_t.clone(), dim, true),
            Matrix::Banded { adjoint, .. } => adjoint.apply(g, dim),
        }
    }
}

/// Dense multiplication on NCHW tensors with `weights_t: [1, 1, in, out]` broadcast over N and
/// C (one batched GEMM, no permutation of the large tensor): forward `W · t` (height) or
/// `t · Wᵀ` (width); with `adjoint`, `Wᵀ · t` or `t · W`.
fn multiply_dense<B: Backend>(
    t: FloatTensor<B>,
    weights_t: FloatTensor<B>,
    dim: Dim,
    adjoint: bool,
) -> FloatTensor<B> {
    match (dim, adjoint) {
        (Dim::Height, false) => B::float_matmul(B::float_transpose(weights_t), t),
        (Dim::Height, true) => B::float_matmul(weights_t, t),
        (Dim::Width, false) => B::float_matmul(t, weights_t),
        (Dim::Width, true) => B::float_matmul(t, B::float_transpose(weights_t)),
    }
}

/// One banded matrix `M: [rows, columns]` on the device (see [`BandShape`]).
#[derive(Debug, Clone)]
pub(crate) struct Band<B: Backend> {
    shape: BandShape,
    /// `[blocks, block, width]`
    weights: FloatTensor<B>,
    /// For gathered windows (no uniform stride): the column each window position reads, as
    /// one `[blocks · width]` index (`columns`: the appended zero row).
    indices: Option<IntTensor<B>>,
}

impl<B: Backend> Band<B> {
    fn upload(
        shape: BandShape,
        weight: impl Fn(usize, usize) -> f64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        // Within `max_weight_bytes` (checked before any map is built), so it fits a `usize`.
        let values = shape.entries(weight);
        let data = TensorData::new(values, [shape.blocks, shape.block, shape.width]);
        let indices = shape.stride.is_none().then(|| {
            let data = TensorData::new(shape.gather_indices(), [shape.blocks * shape.width]);
            B::int_from_data(data.convert::<IntElem<B>>(), device)
        });
        Self {
            weights: float_in::<B>(data, dtype, device),
            indices,
            shape,
        }
    }

    /// The uniform windows' geometry, when this band has them.
    pub fn stride(&self) -> Option<Stride> {
        self.shape.stride
    }

    /// `M` applied along `dim` of `t`: `t`'s `columns` entries along `dim` become `rows`.
    ///
    /// Two fixed strategies, chosen by the band's shape alone (so both runs of a program take
    /// the same one). A band that writes more than it reads (`block ≥ width`: upsampling
    /// forwards), or a height pass over uniform windows (views, nothing copied), lays all
    /// windows out as one tensor and runs one batched GEMM whose result is already NCHW: the
    /// large output is written once. A band that reads more than it writes (adjoints of
    /// upsamples) multiplies each window as a view of `t` and concatenates the small results:
    /// the large input is never copied.
    fn apply(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let shape = &self.shape;
        let uniform = shape.stride.is_some();
        let y = if shape.block >= shape.width || (uniform && dim == Dim::Height) {
            self.batched(t, dim)
        } else {
            self.windowed(t, dim)
        };
        self.cut_rows(y, dim.index())
    }

    /// All windows at once and one batched GEMM, broadcasting the weights
    /// `[1, K, block, width]` over N·C (height) or N·C·H (width). Either way the result is
    /// NCHW as is. (For the width pass, batching over K with the windows as a strided view
    /// instead needs two transposing copies of the output: measured 2× slower.)
    fn batched(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let BandShape { block, blocks, .. } = self.shape;
        let [n, c, h, w] = t.shape().dims::<4>();
        let windows = self.windows(t, dim);
        let weights = self.batch_weights();
        match dim {
            Dim::Height => {
                // [1, K, block, width] · [N·C, K, width, W] = [N·C, K, block, W]
                let y = B::float_matmul(weights, windows);
                B::float_reshape(y, Shape::new([n, c, blocks * block, w]))
            }
            Dim::Width => {
                // [N·C·H, K, 1, width] · [1, K, width, block] = [N·C·H, K, 1, block]
                let y = B::float_matmul(windows, B::float_swap_dims(weights, 2, 3));
                B::float_reshape(y, Shape::new([n, c, h, blocks * block]))
            }
        }
    }

    /// Every window of `t` along `dim`, laid out for [`Self::batched`]'s GEMM:
    /// `[N·C, K, width, W]` (height) or `[N·C·H, K, 1, width]` (width). Views of the padded
    /// input for uniform windows, else one `select`.
    fn windows(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let BandShape { blocks, width, .. } = self.shape;
        let [n, c, h, w] = t.shape().dims::<4>();
        let axis = dim.index();
        let windows = match &self.indices {
            Some(indices) => B::float_select(self.zero_row(t, axis), axis, indices.clone()),
            None => {
                let stride = self
                    .shape
                    .stride
                    .expect("a band without gather indices is uniform");
                let padded = pad_along::<B>(t, axis, &stride);
                return match dim {
                    Dim::Height => {
                        // [N·C, Hp, W] → [N·C, K, W, width] → [N·C, K, width, W] (views)
                        let lines = Shape::new([n * c, stride.padded(), w]);
                        let lines = B::float_reshape(padded, lines);
                        let windows = B::float_unfold(lines, 1, width, stride.step);
                        B::float_swap_dims(windows, 2, 3)
                    }
                    Dim::Width => {
                        // [N·C·H, 1, Wp] → [N·C·H, 1, K, width] → [N·C·H, K, 1, width] (views).
                        // The unit axis comes from the padded line, so its stride (Wp) is at
                        // least the window's width: CubeCL's matmul refuses a matrix whose
                        // outer stride is smaller than its row ("non-contiguous matrix
                        // layout"), as a unit axis added by reshaping the unfolded view
                        // would have (the unfold step).
                        let lines = Shape::new([n * c * h, 1, stride.padded()]);
                        let lines = B::float_reshape(padded, lines);
                        let windows = B::float_unfold(lines, 2, width, stride.step);
                        B::float_swap_dims(windows, 1, 2)
                    }
                };
            }
        };
        match dim {
            Dim::Height => B::float_reshape(windows, Shape::new([n * c, blocks, width, w])),
            Dim::Width => B::float_reshape(windows, Shape::new([n * c * h, blocks, 1, width])),
        }
    }

    /// One GEMM per block on a view of its window, results concatenated in block order.
    fn windowed(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let axis = dim.index();
        let block = self.shape.block;
        let pieces = (0..self.shape.blocks)
            .map(|k| {
                let Some((inside, offset)) = self.shape.window_inside(k) else {
                    let mut zeros = t.shape();
                    zeros[axis] = block;
                    return B::float_zeros(zeros, &B::float_device(&t), t.dtype().into());
                };
                let columns = inside.len();
                let window = slice_along::<B>(t.clone(), axis, inside);
                let weights = B::float_slice(
                    self.weights.clone(),
                    &[
                        Slice::from(k..k + 1),
                        Slice::from(0..block),
                        Slice::from(offset..offset + columns),
                    ],
                );
                let weights = B::float_reshape(weights, Shape::new([1, 1, block, columns]));
                match dim {
                    Dim::Height => B::float_matmul(weights, window),
                    Dim::Width => B::float_matmul(window, B::float_transpose(weights)),
                }
            })
            .collect();
        B::float_cat(pieces, axis)
    }

    /// `M` applied along the last dim of `t: [N, C, R, padded columns]`, already cut and
    /// zero-padded as [`Self::stride`] says, with the result transposed:
    /// `[N, C, rows, R]`. Each window is a view of `t`; one batched GEMM
    /// `[1, K, block, width] · [N·C, K, width, R]` writes the result in one piece. Two such
    /// passes make a 2-D resize with both results written in the layout the next pass (or the
    /// caller) reads, and no gather at all.
    ///
    /// # Panics
    /// Without uniform windows.
    pub fn apply_transposed(&self, t: FloatTensor<B>) -> FloatTensor<B> {
        let stride = self.stride().expect("uniform windows");
        let BandShape {
            block,
            blocks,
            width,
            ..
        } = self.shape;
        let [n, c, r, padded] = t.shape().dims::<4>();
        debug_assert_eq!(padded, stride.padded());
        let planes = B::float_reshape(t, Shape::new([n * c, r, padded]));
        // [N·C, R, K, width] → [N·C, K, width, R]: views.
        let windows = B::float_unfold(planes, 2, width, stride.step);
        let windows = B::float_permute(windows, &[0, 2, 3, 1]);
        let y = B::float_matmul(self.batch_weights(), windows);
        let y = B::float_reshape(y, Shape::new([n, c, blocks * block, r]));
        self.cut_rows(y, 2)
    }

    /// The weights as `[1, K, block, width]`, broadcast by a batched GEMM.
    fn batch_weights(&self) -> FloatTensor<B> {
        let BandShape {
            block,
            blocks,
            width,
            ..
        } = self.shape;
        B::float_reshape(self.weights.clone(), Shape::new([1, blocks, block, width]))
    }

    /// Drops the rows of the last block that lie past `rows` (zero weights).
    fn cut_rows(&self, y: FloatTensor<B>, axis: usize) -> FloatTensor<B> {
        if !self.shape.pads_rows() {
            return y;
        }
        slice_along::<B>(y, axis, 0..self.shape.rows)
    }

    /// `t` with an all-zero row appended along `axis` when exact windows read one.
    fn zero_row(&self, t: FloatTensor<B>, axis: usize) -> FloatTensor<B> {
        if !self.shape.reads_zero_row() {
            return t;
        }
        let mut shape = t.shape();
        shape[axis] = 1;
        let zeros = B::float_zeros(shape, &B::float_device(&t), t.dtype().into());
        B::float_cat(vec![t, zeros], axis)
    }
}

/// `t` cut to `stride.used` entries along `axis` and zero-padded as `stride` says.
fn pad_along<B: Backend>(t: FloatTensor<B>, axis: usize, stride: &Stride) -> FloatTensor<B> {
    let mut strides = [None, None];
    strides[axis - 2] = Some(*stride);
    pad_planes::<B>(t, strides)
}

/// `t: [N, C, H, W]` cut and zero-padded along H and W as each given stride says (one new
/// tensor, or `t` itself when nothing changes).
pub(crate) fn pad_planes<B: Backend>(
    t: FloatTensor<B>,
    strides: [Option<Stride>; 2],
) -> FloatTensor<B> {
    let mut shape = t.shape();
    let mut inner = Vec::with_capacity(4);
    let mut cut = Vec::with_capacity(4);
    let mut changes = false;
    for axis in 0..4 {
        let size = shape[axis];
        let stride = if axis >= 2 { strides[axis - 2] } else { None };
        match stride {
            Some(stride) => {
                changes |= stride.padded() != size || stride.pad_before > 0;
                shape[axis] = stride.padded();
                cut.push(Slice::from(0..stride.used));
                inner.push(Slice::from(
                    stride.pad_before..stride.pad_before + stride.used,
                ));
            }
            None => {
                cut.push(Slice::from(0..size));
                inner.push(Slice::from(0..size));
            }
        }
    }
    if !changes {
        return t;
    }
    let t = B::float_slice(t, &cut);
    let zeros = B::float_zeros(shape, &B::float_device(&t), t.dtype().into());
    B::float_slice_assign(zeros, &inner, t)
}

/// `t` restricted to `range` along `axis`.
fn slice_along<B: Backend>(t: FloatTensor<B>, axis: usize, range: Range<usize>) -> FloatTensor<B> {
    let ranges = burn_deterministic_core::ranges_along(&t.shape(), axis, range);
    B::float_slice(t, &ranges.into_iter().map(Slice::from).collect::<Vec<_>>())
}

/// A float tensor of `data` in `dtype` on `device`.
fn float_in<B: Backend>(data: TensorData, dtype: DType, device: &B::Device) -> FloatTensor<B> {
    let tensor = B::float_from_data(data.convert_dtype(dtype), device);
    if tensor.dtype() != dtype {
        B::float_cast(tensor, dtype.into())
    } else {
        tensor
    }
}
