//! One axis of a separable resize as a linear map `W: [out, in]`, stored dense or banded, and
//! applied along dim 2 (height) or 3 (width) of an NCHW tensor, forward (`W`) or adjoint (`Wᵀ`).
//!
//! Banded: the output axis is split into blocks of `block_size` outputs; each block multiplies
//! only the input window its taps touch (`slice` + `matmul` + `cat`), so FLOPs and weight memory
//! grow with `taps × size` instead of `size²`. The adjoint accumulates each block's contribution
//! into its input window, block after block in a fixed order. Both layouts are fixed sequences
//! of plain ops: deterministic.

use super::weights::{read_axis, tap_window};
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, Shape, Slice, TensorData, TensorMetadata};
use core::ops::Range;

/// The NCHW dimension a map applies along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dim {
    Height,
    Width,
}

/// One block of a banded map: `Wᵀ[inputs, outputs]`.
#[derive(Debug, Clone)]
pub(crate) struct Block<B: Backend> {
    outputs: Range<usize>,
    inputs: Range<usize>,
    /// `[inputs.len(), outputs.len()]`
    weights_t: FloatTensor<B>,
}

/// One axis' linear map.
#[derive(Debug, Clone)]
pub(crate) enum AxisMap<B: Backend> {
    /// `Wᵀ` as one `[1, 1, in, out]` tensor, broadcast over N and C by the matmul.
    Dense { weights_t: FloatTensor<B> },
    /// Blocks covering the outputs in order.
    Banded { input: usize, blocks: Vec<Block<B>> },
}

/// How an axis map is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Layout {
    Dense,
    Banded { block_size: usize },
}

/// The input window of outputs `outputs`.
fn block_window(
    outputs: &Range<usize>,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
) -> Range<usize> {
    let first = tap_window(outputs.start, input, output, options);
    let last = tap_window(outputs.end - 1, input, output, options);
    first.start.min(last.start)..first.end.max(last.end)
}

/// Multiply-adds per column of the other axis in `layout`: also the number of weights it keeps.
pub(crate) fn cost(
    layout: Layout,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
) -> u64 {
    match layout {
        Layout::Dense => (input * output) as u64,
        Layout::Banded { block_size } => blocks(output, block_size)
            .map(|o| (block_window(&o, input, output, options).len() * o.len()) as u64)
            .sum(),
    }
}

/// Bytes one axis' weights take on the device in `layout`: what is kept, plus what reading the
/// weights off the kernel holds at once (a few impulse channels and their response).
pub(crate) fn build_bytes(
    layout: Layout,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
) -> u64 {
    let widest = (0..output)
        .map(|o| tap_window(o, input, output, options).len())
        .max()
        .unwrap_or(1);
    let reading = (widest + 1).min(input) * (input + output);
    let kept = cost(layout, input, output, options) as usize;
    (kept.max(reading) * dtype.size()) as u64
}

fn blocks(output: usize, block_size: usize) -> impl Iterator<Item = Range<usize>> {
    (0..output)
        .step_by(block_size)
        .map(move |start| start..(start + block_size).min(output))
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
        let upload = |inputs: Range<usize>, outputs: Range<usize>| {
            let values: Vec<f64> = inputs
                .clone()
                .flat_map(|i| outputs.clone().map(move |o| (i, o)))
                .map(|(i, o)| weights.get(o, i))
                .collect();
            let data = TensorData::new(values, [inputs.len(), outputs.len()]);
            let tensor = B::float_from_data(data.convert_dtype(dtype), device);
            if tensor.dtype() != dtype {
                B::float_cast(tensor, dtype.into())
            } else {
                tensor
            }
        };
        let map = match layout {
            Layout::Dense => AxisMap::Dense {
                weights_t: B::float_reshape(
                    upload(0..input, 0..output),
                    Shape::new([1, 1, input, output]),
                ),
            },
            Layout::Banded { block_size } => AxisMap::Banded {
                input,
                blocks: blocks(output, block_size)
                    .map(|outputs| {
                        let inputs = weights.support(outputs.clone());
                        Block {
                            weights_t: upload(inputs.clone(), outputs.clone()),
                            outputs,
                            inputs,
                        }
                    })
                    .collect(),
            },
        };
        let peak = map.bytes().max(weights.read_bytes);
        (map, peak)
    }

    /// Bytes held by the map's tensors.
    pub(crate) fn bytes(&self) -> u64 {
        let bytes = |t: &FloatTensor<B>| (t.shape().num_elements() * t.dtype().size()) as u64;
        match self {
            AxisMap::Dense { weights_t, .. } => bytes(weights_t),
            AxisMap::Banded { blocks, .. } => blocks.iter().map(|b| bytes(&b.weights_t)).sum(),
        }
    }

    /// Multiply-adds per column of the other axis.
    pub(crate) fn macs(&self) -> u64 {
        match self {
            AxisMap::Dense { weights_t, .. } => weights_t.shape().num_elements() as u64,
            AxisMap::Banded { blocks, .. } => blocks
                .iter()
                .map(|b| (b.inputs.len() * b.outputs.len()) as u64)
                .sum(),
        }
    }

    /// `W` applied along `dim` of `t` (the forward resize of that axis).
    pub(crate) fn forward(&self, t: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        if let AxisMap::Dense { weights_t } = self {
            // One batched GEMM on the NCHW tensor (measured faster than the matrix form below
            // on ndarray and flex: no permutation of the large output).
            return multiply::<B>(t, weights_t.clone(), dim, false);
        }
        let (t, restore) = to_matrix::<B>(t, dim);
        let y = match self {
            AxisMap::Dense { .. } => unreachable!("handled above"),
            AxisMap::Banded { blocks, .. } => {
                let pieces = blocks
                    .iter()
                    .map(|block| {
                        let window = slice_axis::<B>(t.clone(), dim, block.inputs.clone());
                        multiply::<B>(window, block.weights_t.clone(), dim, false)
                    })
                    .collect();
                B::float_cat(pieces, axis_of(dim))
            }
        };
        restore.apply::<B>(y)
    }

    /// `Wᵀ` applied along `dim` of `g` (the adjoint: gradient of the forward).
    pub(crate) fn adjoint(&self, g: FloatTensor<B>, dim: Dim) -> FloatTensor<B> {
        if let AxisMap::Dense { weights_t } = self {
            return multiply::<B>(g, weights_t.clone(), dim, true);
        }
        let (g, restore) = to_matrix::<B>(g, dim);
        let dx = match self {
            AxisMap::Dense { .. } => unreachable!("handled above"),
            AxisMap::Banded { input, blocks } => {
                let mut shape = g.shape();
                shape[axis_of(dim)] = *input;
                let device = B::float_device(&g);
                let mut dx = B::float_zeros(shape, &device, g.dtype().into());
                // Block after block, in order: windows of neighbouring blocks overlap by a few
                // taps, and a fixed accumulation order keeps the sum reproducible.
                for block in blocks {
                    let rows = slice_axis::<B>(g.clone(), dim, block.outputs.clone());
                    let contribution = multiply::<B>(rows, block.weights_t.clone(), dim, true);
                    let current = slice_axis::<B>(dx.clone(), dim, block.inputs.clone());
                    let ranges = axis_slices(&dx.shape(), dim, block.inputs.clone());
                    dx = B::float_slice_assign(dx, &ranges, B::float_add(current, contribution));
                }
                dx
            }
        };
        restore.apply::<B>(dx)
    }
}

/// The NCHW tensor as one matrix whose rows (height) or columns (width) are the resized axis,
/// so that every multiplication is a single large 2-D GEMM (`[out, in] · [in, N·C·W]` or
/// `[N·C·H, in] · [in, out]`) instead of `N·C` small ones.
fn to_matrix<B: Backend>(t: FloatTensor<B>, dim: Dim) -> (FloatTensor<B>, Restore) {
    let [n, c, h, w] = t.shape().dims::<4>();
    match dim {
        Dim::Height => {
            let t = B::float_permute(t, &[2, 0, 1, 3]);
            (
                B::float_reshape(t, Shape::new([h, n * c * w])),
                Restore::Height([n, c, w]),
            )
        }
        Dim::Width => (
            B::float_reshape(t, Shape::new([n * c * h, w])),
            Restore::Width([n, c, h]),
        ),
    }
}

/// How to turn the resized matrix back into NCHW.
enum Restore {
    Height([usize; 3]),
    Width([usize; 3]),
}

impl Restore {
    fn apply<B: Backend>(self, m: FloatTensor<B>) -> FloatTensor<B> {
        match self {
            Restore::Height([n, c, w]) => {
                let rows = m.shape()[0];
                let t = B::float_reshape(m, Shape::new([rows, n, c, w]));
                B::float_permute(t, &[1, 2, 0, 3])
            }
            Restore::Width([n, c, h]) => {
                let columns = m.shape()[1];
                B::float_reshape(m, Shape::new([n, c, h, columns]))
            }
        }
    }
}

/// The matrix axis the resized dimension lies on.
fn axis_of(dim: Dim) -> usize {
    match dim {
        Dim::Height => 0,
        Dim::Width => 1,
    }
}

/// `Wᵀ` multiplication: forward `W · t` (height) or `t · Wᵀ` (width); with `adjoint`, `Wᵀ · t`
/// or `t · W`. Works on the matrix form (`weights_t: [in, out]`) and on NCHW tensors with
/// `weights_t: [1, 1, in, out]` broadcast over N and C: the last two dims are the matrix.
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

fn axis_slices(shape: &Shape, dim: Dim, range: Range<usize>) -> Vec<Slice> {
    (0..2)
        .map(|axis| {
            if axis == axis_of(dim) {
                Slice::from(range.clone())
            } else {
                Slice::from(0..shape[axis])
            }
        })
        .collect()
}

fn slice_axis<B: Backend>(t: FloatTensor<B>, dim: Dim, range: Range<usize>) -> FloatTensor<B> {
    let slices = axis_slices(&t.shape(), dim, range);
    B::float_slice(t, &slices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn_backend::ops::InterpolateMode;

    #[test]
    fn blocks_cover_the_outputs_in_order() {
        let all: Vec<_> = blocks(10, 4).collect();
        assert_eq!(all, vec![0..4, 4..8, 8..10]);
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
        let dense = cost(Layout::Dense, 1024, 4096, &options);
        let banded = cost(Layout::Banded { block_size: 64 }, 1024, 4096, &options);
        assert_eq!(dense, 1024 * 4096);
        // 64 outputs read ~16 inputs plus the halo: far below the dense 1024 per output.
        assert!(banded <= 4096 * 24, "{banded}");
    }
}
