//! One axis of a separable resize as a linear map `W: [out, in]`, stored dense or banded, and
//! applied along dim 2 (height) or 3 (width) of an NCHW tensor, forward (`W`) or adjoint (`Wᵀ`).
//!
//! Banded: the rows of a matrix are split into `K` blocks of `block` rows; block `k` multiplies
//! only a window of `width` consecutive columns, the columns its taps touch, so FLOPs and weight
//! memory grow with `taps × size` instead of `size²`. Where the windows can start at a uniform
//! step (most scale factors: see [`Stride`]) they are views of the zero-padded input
//! (`unfold`): nothing is gathered, and a forward with uniform windows on both axes runs as two
//! transposing passes (see [`Band::apply_transposed`]), each one batched GEMM whose result is
//! laid out as the next step reads it. Otherwise a pass is one gather of the `K` windows
//! (`select` along the resized dim, a read: no atomics) and one batched GEMM
//! `[K, block, width] · [K, width, ·]`, or one GEMM per window view and a concatenation (see
//! [`Band::apply`] for which). The forward uses the band of `W` (blocks of outputs), the adjoint
//! the band of `Wᵀ` (blocks of inputs, each reading the outputs that touch them): no scatter, so
//! the backward needs no accumulation order at all. Every layout is a fixed sequence of plain
//! ops: deterministic.

use super::weights::{read_axis, tap_window, AxisWeights};
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::{FloatTensor, IntElem, IntTensor};
use burn_backend::{Backend, DType, Shape, Slice, TensorData, TensorMetadata};
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

/// One axis' linear map.
#[derive(Debug, Clone)]
pub(crate) enum AxisMap<B: Backend> {
    /// `Wᵀ` as one `[1, 1, in, out]` tensor, broadcast over N and C by the matmul.
    Dense { weights_t: FloatTensor<B> },
    /// `W` and `Wᵀ` as bands (boxed: a band is much larger than a tensor handle).
    Banded {
        forward: Box<Band<B>>,
        adjoint: Box<Band<B>>,
    },
}

/// How an axis map is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Layout {
    Dense,
    /// Blocks of at most `block_size` outputs. `block_size: 1` keeps windows exact (see
    /// [`BandShape::exact`]).
    Banded {
        block_size: usize,
    },
}

/// The geometry of a band of a `[rows, columns]` matrix, given each block's column support.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BandShape {
    rows: usize,
    columns: usize,
    /// Rows per block; the last block may run past `rows` (zero weights, sliced off).
    block: usize,
    blocks: usize,
    /// Columns per window: the widest block support, or the uniform windows' width.
    width: usize,
    /// Each window's first column; negative (or windows running past `columns`) only with
    /// `stride`, where those positions read zero padding.
    starts: Vec<isize>,
    /// Windows hold exactly their block's support: positions past it read an all-zero row
    /// appended to the input instead of a neighbouring column, so that a non-finite value
    /// reaches only the outputs whose taps touch it (`0 · NaN` would be NaN).
    exact: bool,
    /// Each block's support, for the exact windows.
    supports: Vec<Range<usize>>,
    /// Set when the windows start at a uniform step: then they are views of the zero-padded
    /// input (`unfold`), with no gather at all.
    stride: Option<Stride>,
}

/// Uniform windows: window `k` covers columns `k · step − pad_before ..` of the input, which is
/// cut to its first `used` columns (the rest are read by no row) and zero-padded by
/// `pad_before` and `pad_after`, so that the padded length is `(blocks − 1) · step + width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stride {
    step: usize,
    pad_before: usize,
    used: usize,
    pad_after: usize,
}

impl Stride {
    /// Uniform windows holding every block's support, if they are at most 1/8 wider than the
    /// widest support (`width`): the step is the mean distance between the first and the last
    /// block's start. Empty supports (blocks read by nothing) fit anywhere.
    fn fit(supports: &[Range<usize>], columns: usize, width: usize) -> Option<(Self, usize)> {
        let placed: Vec<(usize, &Range<usize>)> = supports
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .collect();
        let (first, last) = (placed.first()?, placed.last()?);
        let step = if last.0 > first.0 {
            let distance = (last.1.start - first.1.start) as f64 / (last.0 - first.0) as f64;
            (distance.round() as usize).max(1)
        } else {
            1
        };
        let pad_before = placed
            .iter()
            .map(|(k, s)| (k * step).saturating_sub(s.start))
            .max()?;
        let uniform_width = placed
            .iter()
            .map(|(k, s)| s.end + pad_before - k * step)
            .max()?;
        if uniform_width * 8 > width * 9 {
            return None;
        }
        let padded = (supports.len() - 1) * step + uniform_width;
        let used = columns.min(padded - pad_before);
        let stride = Stride {
            step,
            pad_before,
            used,
            pad_after: padded - pad_before - used,
        };
        Some((stride, uniform_width))
    }

    fn padded(&self) -> usize {
        self.pad_before + self.used + self.pad_after
    }
}

impl BandShape {
    /// `block_size` is an upper bound: the rows are split into equal blocks so that the last
    /// one wastes as few rows as possible. `uniform` allows uniform windows (see [`Stride`]).
    fn new(
        rows: usize,
        columns: usize,
        block_size: usize,
        exact: bool,
        uniform: bool,
        support: impl Fn(Range<usize>) -> Range<usize>,
    ) -> Self {
        let blocks = rows.div_ceil(block_size.max(1));
        let block = rows.div_ceil(blocks);
        let supports: Vec<Range<usize>> = (0..blocks)
            .map(|k| support(k * block..((k + 1) * block).min(rows)))
            .collect();
        let widest = supports.iter().map(|s| s.len()).max().unwrap_or(1).max(1);
        let strided = match uniform && !exact {
            true => Stride::fit(&supports, columns, widest),
            false => None,
        };
        let (stride, width, starts) = match strided {
            Some((stride, width)) => {
                let starts = (0..blocks)
                    .map(|k| (k * stride.step) as isize - stride.pad_before as isize)
                    .collect();
                (Some(stride), width, starts)
            }
            None => {
                let starts = supports
                    .iter()
                    .map(|s| match exact {
                        true => s.start,
                        false => s.start.min(columns - widest),
                    } as isize)
                    .collect();
                (None, widest, starts)
            }
        };
        Self {
            rows,
            columns,
            block,
            blocks,
            width,
            starts,
            exact,
            supports,
            stride,
        }
    }

    /// The input column that position `j` of block `k`'s window reads, or `None` where it
    /// reads a zero (padding, or for exact windows the appended zero row).
    fn column(&self, k: usize, j: usize) -> Option<usize> {
        let column = self.starts[k] + j as isize;
        let outside = column < 0
            || column as usize >= self.columns
            || (self.exact && column as usize >= self.supports[k].end);
        (!outside).then_some(column as usize)
    }

    /// Whether some window reads the appended zero row.
    fn reads_zero_row(&self) -> bool {
        self.exact && self.supports.iter().any(|s| s.len() < self.width)
    }

    /// Weights kept (`blocks × block × width`): also the multiply-adds per column of the
    /// other axis.
    fn weights(&self) -> u64 {
        product(&[self.blocks, self.block, self.width])
    }

    /// Bytes kept on the device: weights in `dtype` and, for gathered windows, the gather's
    /// indices (counted as i64, the widest integer element of Burn's backends).
    fn bytes(&self, dtype: DType) -> u64 {
        let indices = match self.stride {
            Some(_) => 0,
            None => product(&[self.blocks, self.width, 8]),
        };
        self.weights()
            .saturating_mul(dtype.size() as u64)
            .saturating_add(indices)
    }
}

/// One banded matrix `M: [rows, columns]` on the device (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Band<B: Backend> {
    shape: BandShape,
    /// `[blocks, block, width]`
    weights: FloatTensor<B>,
    windows: Windows<B>,
}

/// How a band's windows are cut out of its input.
#[derive(Debug, Clone)]
enum Windows<B: Backend> {
    /// Views of the input, cut and zero-padded as the stride says (`unfold`): no gather.
    Unfolded(Stride),
    /// One `select` of `[blocks · width]` columns, the column each window position reads
    /// (`columns`: the appended zero row).
    Gathered(IntTensor<B>),
}

impl<B: Backend> Band<B> {
    fn upload(
        shape: BandShape,
        weight: impl Fn(usize, usize) -> f64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        // Within `max_weight_bytes` (checked before any map is built), so it fits a `usize`.
        let mut values = Vec::with_capacity(shape.weights() as usize);
        for k in 0..shape.blocks {
            for r in k * shape.block..(k + 1) * shape.block {
                for j in 0..shape.width {
                    values.push(match shape.column(k, j) {
                        Some(column) if r < shape.rows => weight(r, column),
                        _ => 0.0,
                    });
                }
            }
        }
        let data = TensorData::new(values, [shape.blocks, shape.block, shape.width]);
        let windows = match shape.stride {
            Some(stride) => Windows::Unfolded(stride),
            None => {
                let indices: Vec<i64> = (0..shape.blocks)
                    .flat_map(|k| (0..shape.width).map(move |j| (k, j)))
                    .map(|(k, j)| shape.column(k, j).unwrap_or(shape.columns) as i64)
                    .collect();
                let data = TensorData::new(indices, [shape.blocks * shape.width]);
                Windows::Gathered(B::int_from_data(data.convert::<IntElem<B>>(), device))
            }
        };
        Self {
            weights: float_in::<B>(data, dtype, device),
            windows,
            shape,
        }
    }

    fn bytes(&self) -> u64 {
        let weights = self.weights.shape().num_elements() * self.weights.dtype().size();
        let indices = match &self.windows {
            Windows::Unfolded(_) => 0,
            Windows::Gathered(indices) => indices.shape().num_elements() * indices.dtype().size(),
        };
        (weights + indices) as u64
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
        let unfolded = matches!(self.windows, Windows::Unfolded(_));
        let all_at_once = shape.block >= shape.width || (unfolded && dim == Dim::Height);
        let y = if all_at_once {
            self.batched(t, dim)
        } else {
            self.windowed(t, dim)
        };
        self.cut_rows(y, dim.index())
    }

    /// Drops the rows of the last block that lie past `rows` (zero weights).
    fn cut_rows(&self, y: FloatTensor<B>, axis: usize) -> FloatTensor<B> {
        if self.shape.blocks * self.shape.block == self.shape.rows {
            return y;
        }
        slice_along::<B>(y, axis, 0..self.shape.rows)
    }

    /// The weights as `[1, K, block, width]`, broadcast over N·C by a batched GEMM.
    fn batch_weights(&self) -> FloatTensor<B> {
        let BandShape {
            block,
            blocks,
            width,
            ..
        } = self.shape;
        B::float_reshape(self.weights.clone(), Shape::new([1, blocks, block, width]))
    }

    /// All windows at once and one batched GEMM.
    fn batched(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let BandShape {
            block,
            blocks,
            width,
            ..
        } = self.shape;
        let [n, c, h, w] = t.shape().dims::<4>();
        let weights = self.batch_weights();
        match dim {
            Dim::Height => {
                // [1, K, block, width] · [N·C, K, width, W] = [N·C, K, block, W]: NCHW as is.
                let windows = match &self.windows {
                    Windows::Unfolded(stride) => {
                        // [N·C, Hp, W] → [N·C, K, W, width] (a view) → [N·C, K, width, W]
                        let padded = pad_along::<B>(t, 2, stride);
                        let planes =
                            B::float_reshape(padded, Shape::new([n * c, stride.padded(), w]));
                        let windows = B::float_unfold(planes, 1, width, stride.step);
                        B::float_swap_dims(windows, 2, 3)
                    }
                    Windows::Gathered(indices) => {
                        let gathered = B::float_select(self.zero_row(t, 2), 2, indices.clone());
                        B::float_reshape(gathered, Shape::new([n * c, blocks, width, w]))
                    }
                };
                let y = B::float_matmul(weights, windows);
                B::float_reshape(y, Shape::new([n, c, blocks * block, w]))
            }
            Dim::Width => {
                // [N·C·H, K, 1, width] · [1, K, width, block] = [N·C·H, K, 1, block]: also
                // NCHW as is. (Batching over K with the windows as a strided view instead
                // needs two transposing copies of the output: measured 2× slower.)
                let windows = match &self.windows {
                    Windows::Unfolded(stride) => {
                        let padded = pad_along::<B>(t, 3, stride);
                        let rows =
                            B::float_reshape(padded, Shape::new([n * c * h, stride.padded()]));
                        B::float_unfold(rows, 1, width, stride.step)
                    }
                    Windows::Gathered(indices) => {
                        B::float_select(self.zero_row(t, 3), 3, indices.clone())
                    }
                };
                let windows = B::float_reshape(windows, Shape::new([n * c * h, blocks, 1, width]));
                let weights = B::float_swap_dims(weights, 2, 3);
                let y = B::float_matmul(windows, weights);
                B::float_reshape(y, Shape::new([n, c, h, blocks * block]))
            }
        }
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

    /// One GEMM per block on a view of its window, results concatenated in block order.
    fn windowed(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        let axis = dim.index();
        let shape = &self.shape;
        let block = shape.block;
        let pieces = (0..shape.blocks)
            .map(|k| {
                // The part of the window inside `t`; exact windows hold only their support
                // (the zero row is not needed here).
                let (start, end) = match shape.exact {
                    true => (
                        shape.supports[k].start as isize,
                        shape.supports[k].end as isize,
                    ),
                    false => (shape.starts[k], shape.starts[k] + shape.width as isize),
                };
                let first = start.max(0) as usize;
                let last = (end.max(0) as usize).min(shape.columns);
                if last <= first {
                    let mut zeros = t.shape();
                    zeros[axis] = block;
                    return B::float_zeros(zeros, &B::float_device(&t), t.dtype().into());
                }
                let offset = (first as isize - shape.starts[k]) as usize;
                let window = slice_along::<B>(t.clone(), axis, first..last);
                let weights = B::float_slice(
                    self.weights.clone(),
                    &[
                        Slice::from(k..k + 1),
                        Slice::from(0..block),
                        Slice::from(offset..offset + last - first),
                    ],
                );
                let weights = B::float_reshape(weights, Shape::new([1, 1, block, last - first]));
                match dim {
                    Dim::Height => B::float_matmul(weights, window),
                    Dim::Width => B::float_matmul(window, B::float_transpose(weights)),
                }
            })
            .collect();
        B::float_cat(pieces, axis)
    }

    /// The uniform windows' geometry, when this band has them.
    pub(crate) fn stride(&self) -> Option<Stride> {
        match self.windows {
            Windows::Unfolded(stride) => Some(stride),
            Windows::Gathered(_) => None,
        }
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
    pub(crate) fn apply_transposed(&self, t: FloatTensor<B>) -> FloatTensor<B> {
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
    let slices: Vec<Slice> = t
        .shape()
        .iter()
        .enumerate()
        .map(|(d, &size)| Slice::from(if d == axis { range.clone() } else { 0..size }))
        .collect();
    B::float_slice(t, &slices)
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

/// Rows per block of the adjoint band, for `block_size` outputs per block of the forward one:
/// as many inputs as such a block reads, so that both bands have about the same aspect (and
/// the same cost). Exact windows stay exact.
fn adjoint_block(block_size: usize, input: usize, output: usize) -> usize {
    if block_size == 1 {
        1
    } else {
        ((block_size * input) / output).max(1)
    }
}

/// Per column of a matrix with row supports `rows`, the range of rows that read it.
fn transpose_supports(rows: &[Range<usize>], columns: usize) -> Vec<Range<usize>> {
    let mut first = vec![usize::MAX; columns];
    let mut last = vec![0; columns];
    for (r, support) in rows.iter().enumerate() {
        for c in support.clone() {
            first[c] = first[c].min(r);
            last[c] = last[c].max(r + 1);
        }
    }
    (0..columns)
        .map(|c| {
            if first[c] == usize::MAX {
                0..0 // read by no row
            } else {
                first[c]..last[c]
            }
        })
        .collect()
}

/// The union of the non-empty supports of `block` (empty when all are).
fn union(supports: &[Range<usize>], block: Range<usize>) -> Range<usize> {
    let parts = supports[block].iter().filter(|s| !s.is_empty());
    let start = parts.clone().map(|s| s.start).min();
    let end = parts.map(|s| s.end).max();
    match (start, end) {
        (Some(start), Some(end)) => start..end,
        _ => 0..0,
    }
}

/// Both bands of one axis with `block_size` outputs per forward block, given the input support
/// of every output (`forward`) and the output support of every input (`adjoint`).
fn band_shapes(
    block_size: usize,
    input: usize,
    output: usize,
    forward: &[Range<usize>],
    adjoint: &[Range<usize>],
) -> (BandShape, BandShape) {
    let exact = block_size == 1;
    (
        // Uniform windows for the forward only: the adjoint of an upsample reads the large
        // gradient, whose zero-padded copy would cost more than its views do.
        BandShape::new(output, input, block_size, exact, true, |b| {
            union(forward, b)
        }),
        BandShape::new(
            input,
            output,
            adjoint_block(block_size, input, output),
            exact,
            false,
            |b| union(adjoint, b),
        ),
    )
}

/// What one axis' layouts would cost, from the conservative tap windows (before any weight is
/// read): computed once per resize check, then asked for each layout.
pub(crate) struct AxisEstimate {
    input: usize,
    output: usize,
    /// The inputs each output may read.
    forward: Vec<Range<usize>>,
    /// The outputs each input may be read by.
    adjoint: Vec<Range<usize>>,
}

impl AxisEstimate {
    /// `None` when the host cannot hold the per-output windows (an absurd size with a raised
    /// `max_weight_bytes`): reserved up front, so that fails as a value, not an abort.
    pub(crate) fn new(input: usize, output: usize, options: &InterpolateOptions) -> Option<Self> {
        let mut forward = Vec::new();
        forward.try_reserve_exact(output).ok()?;
        forward.extend((0..output).map(|o| tap_window(o, input, output, options)));
        // `input` is an existing tensor's dimension: its windows fit wherever the tensor does.
        let adjoint = transpose_supports(&forward, input);
        Some(Self {
            input,
            output,
            forward,
            adjoint,
        })
    }

    fn bands(&self, block_size: usize) -> (BandShape, BandShape) {
        band_shapes(
            block_size,
            self.input,
            self.output,
            &self.forward,
            &self.adjoint,
        )
    }

    /// Multiply-adds per column of the other axis in `layout` (forward).
    pub(crate) fn macs(&self, layout: Layout) -> u64 {
        match layout {
            Layout::Dense => product(&[self.input, self.output]),
            Layout::Banded { block_size } => self.bands(block_size).0.weights(),
        }
    }

    /// Bytes the axis' weights take on the device in `layout` (an upper bound): what is kept,
    /// or what reading the weights off the kernel holds at once (a few impulse channels and
    /// their response), whichever is larger.
    pub(crate) fn bytes(&self, layout: Layout, dtype: DType) -> u64 {
        let widest = self.forward.iter().map(|w| w.len()).max().unwrap_or(1);
        let reading = product(&[
            (widest + 1).min(self.input),
            self.input.saturating_add(self.output),
            dtype.size(),
        ]);
        let kept = match layout {
            Layout::Dense => product(&[self.input, self.output, dtype.size()]),
            Layout::Banded { block_size } => {
                let (forward, adjoint) = self.bands(block_size);
                forward.bytes(dtype).saturating_add(adjoint.bytes(dtype))
            }
        };
        kept.max(reading)
    }
}

impl<B: Backend> AxisMap<B> {
    /// Builds the map of one axis from `B`'s kernel. Also returns the peak bytes of weight
    /// tensors alive on the device at once while building, from the tensors' shapes.
    pub(crate) fn build(
        layout: Layout,
        input: usize,
        output: usize,
        options: &InterpolateOptions,
        dtype: DType,
        device: &B::Device,
    ) -> (Self, u64) {
        let weights = read_axis::<B>(input, output, options, dtype, device);
        let map = match layout {
            Layout::Dense => {
                let values: Vec<f64> = (0..input)
                    .flat_map(|i| (0..output).map(move |o| (i, o)))
                    .map(|(i, o)| weights.get(o, i))
                    .collect();
                let data = TensorData::new(values, [1, 1, input, output]);
                AxisMap::Dense {
                    weights_t: float_in::<B>(data, dtype, device),
                }
            }
            Layout::Banded { block_size } => {
                let forward = exact_supports(&weights, output);
                let adjoint = transpose_supports(&forward, input);
                let (f, a) = band_shapes(block_size, input, output, &forward, &adjoint);
                AxisMap::Banded {
                    forward: Box::new(Band::upload(f, |o, i| weights.get(o, i), dtype, device)),
                    adjoint: Box::new(Band::upload(a, |i, o| weights.get(o, i), dtype, device)),
                }
            }
        };
        let peak = map.bytes().max(weights.read_bytes);
        (map, peak)
    }

    /// Bytes held by the map's tensors.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            AxisMap::Dense { weights_t } => {
                (weights_t.shape().num_elements() * weights_t.dtype().size()) as u64
            }
            AxisMap::Banded { forward, adjoint } => forward.bytes() + adjoint.bytes(),
        }
    }

    /// The forward band, when it has uniform windows (see [`Band::apply_transposed`]).
    pub(crate) fn uniform_forward(&self) -> Option<&Band<B>> {
        match self {
            AxisMap::Banded { forward, .. } if forward.stride().is_some() => Some(forward.as_ref()),
            _ => None,
        }
    }

    pub(crate) fn is_dense(&self) -> bool {
        matches!(self, AxisMap::Dense { .. })
    }

    /// Multiply-adds per column of the other axis (forward).
    pub(crate) fn macs(&self) -> u64 {
        match self {
            AxisMap::Dense { weights_t } => weights_t.shape().num_elements() as u64,
            AxisMap::Banded { forward, .. } => forward.shape.weights(),
        }
    }

    /// `W` applied along `dim` of `t` (the forward resize of that axis).
    pub(crate) fn forward(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        match self {
            AxisMap::Dense { weights_t } => multiply::<B>(t, weights_t.clone(), dim, false),
            AxisMap::Banded { forward, .. } => forward.apply(t, dim),
        }
    }

    /// `Wᵀ` applied along `dim` of `g` (the adjoint: gradient of the forward).
    pub(crate) fn adjoint(&self, g: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        match self {
            AxisMap::Dense { weights_t } => multiply::<B>(g, weights_t.clone(), dim, true),
            AxisMap::Banded { adjoint, .. } => adjoint.apply(g, dim),
        }
    }
}

/// The exact (trimmed, non-zero) input support of every output.
fn exact_supports(weights: &AxisWeights, output: usize) -> Vec<Range<usize>> {
    (0..output).map(|o| weights.support(o..o + 1)).collect()
}

/// Dense multiplication on NCHW tensors with `weights_t: [1, 1, in, out]` broadcast over N and
/// C (one batched GEMM, no permutation of the large tensor): forward `W · t` (height) or
/// `t · Wᵀ` (width); with `adjoint`, `Wᵀ · t` or `t · W`.
fn multiply<B: Backend>(
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

/// The product of sizes as `u64`, saturating: a count of bytes or multiply-adds that is
/// compared with a limit, where saturation means "over any limit", never a wrapped small
/// number (on 32-bit targets a `usize` product wraps well before a resize is absurd).
pub(crate) fn product(factors: &[usize]) -> u64 {
    factors
        .iter()
        .fold(1u64, |acc, &f| acc.saturating_mul(f as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes multiply as saturating `u64`: an absurd product is "over any limit", never a
    /// wrapped small number (as a `usize` product would be on a 32-bit target).
    #[test]
    fn size_products_saturate_instead_of_wrapping() {
        assert_eq!(product(&[3, 5, 7]), 105);
        assert_eq!(product(&[usize::MAX, 2]), u64::MAX);
        assert_eq!(product(&[1 << 31, 1 << 31, 2]), 1 << 63);
        assert_eq!(product(&[1 << 31, 1 << 31, 4]), u64::MAX);
        assert_eq!(
            product(&[u32::MAX as usize, u32::MAX as usize, 4]),
            u64::MAX
        );
        assert_eq!(product(&[]), 1);
    }
    use burn_backend::ops::InterpolateMode;

    #[test]
    fn blocks_split_the_rows_evenly_and_windows_stay_inside() {
        let supports: Vec<Range<usize>> = (0..10).map(|r| r / 2..r / 2 + 2).collect();
        let shape = BandShape::new(10, 6, 4, false, false, |b| union(&supports, b));
        // ceil(10 / 4) = 3 blocks of ceil(10 / 3) = 4 rows: 12 rows, the last two zero.
        assert_eq!((shape.blocks, shape.block, shape.width), (3, 4, 3));
        assert_eq!(shape.starts, vec![0, 2, 3]); // the last window moved back inside
        assert!(!shape.reads_zero_row());
        let exact = BandShape::new(10, 6, 1, true, true, |b| union(&supports, b));
        assert_eq!((exact.blocks, exact.block, exact.width), (10, 1, 2));
        assert_eq!(exact.stride, None, "exact windows are never uniform");
        // Row 9 reads 4..6, exactly its support: no zero row needed.
        assert_eq!(exact.column(9, 1), Some(5));
        let ragged: Vec<Range<usize>> = vec![0..1, 0..2, 3..3];
        let exact = BandShape::new(3, 4, 1, true, false, |b| union(&ragged, b));
        assert!(exact.reads_zero_row());
        assert_eq!(exact.column(0, 1), None, "past the support: the zero row");
        assert_eq!(
            (exact.column(2, 0), exact.column(2, 1)),
            (None, None),
            "read by nothing"
        );
    }

    #[test]
    fn uniform_windows_hold_every_support_and_pad_the_edges() {
        // Blocks of 4 rows reading 2 columns each, plus a halo of one on both sides: the
        // 4x upsample pattern, clamped at the edges.
        let supports: Vec<Range<usize>> = (0..4)
            .map(|k: usize| (2 * k).saturating_sub(1)..(2 * k + 3).min(8))
            .collect();
        let shape = BandShape::new(16, 8, 4, false, true, |b| supports[b.start / 4].clone());
        let stride = shape.stride.expect("uniform");
        assert_eq!((stride.step, stride.pad_before, shape.width), (2, 1, 4));
        // Padded length (4 - 1) · 2 + 4 = 10 = 1 + 8 + 1.
        assert_eq!((stride.used, stride.pad_after, stride.padded()), (8, 1, 10));
        assert_eq!(shape.starts, vec![-1, 1, 3, 5]);
        assert_eq!(shape.column(0, 0), None, "the padding before the input");
        assert_eq!(shape.column(3, 3), None, "the padding after it");
        assert_eq!(shape.column(3, 2), Some(7));
        for (k, support) in supports.iter().enumerate() {
            let window = shape.starts[k]..shape.starts[k] + shape.width as isize;
            assert!(window.start <= support.start as isize && support.end as isize <= window.end);
        }
        // Starts that drift away from any uniform step need windows much wider than the
        // supports: gathered windows instead.
        let drifting = [0..2, 1..3, 6..8, 7..9];
        let shape = BandShape::new(4, 9, 1, false, true, |b| drifting[b.start].clone());
        assert_eq!(shape.stride, None);
        assert_eq!(shape.width, 2);
    }

    #[test]
    fn transposed_supports_list_the_rows_that_read_each_column() {
        let rows = vec![0..2, 1..3, 4..5];
        assert_eq!(
            transpose_supports(&rows, 6),
            vec![0..1, 0..2, 1..2, 0..0, 2..3, 0..0]
        );
    }

    #[test]
    fn tap_windows_stay_inside_the_input() {
        for mode in [
            InterpolateMode::Nearest,
            InterpolateMode::Bilinear,
            InterpolateMode::Bicubic,
            InterpolateMode::Lanczos3,
        ] {
            for align_corners in [false, true] {
                let options =
                    InterpolateOptions::new(mode.clone()).with_align_corners(align_corners);
                for (input, output) in [(1, 1), (1, 7), (7, 1), (5, 17), (64, 9)] {
                    for o in 0..output {
                        let w = tap_window(o, input, output, &options);
                        assert!(
                            !w.is_empty() && w.end <= input,
                            "{options:?} {input}->{output} o={o}: {w:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn banded_cost_grows_with_taps_not_size() {
        let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
        let estimate = AxisEstimate::new(1024, 4096, &options).unwrap();
        let dense = estimate.macs(Layout::Dense);
        let banded = estimate.macs(Layout::Banded { block_size: 64 });
        assert_eq!(dense, 1024 * 4096);
        // 64 outputs read ~16 inputs plus the halo: far below the dense 1024 per output.
        assert!(banded <= 4096 * 24, "{banded}");
    }
}
