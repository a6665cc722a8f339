//! Weights read off the inner backend's own forward kernel.
//!
//! The classic way to read a linear operator's matrix is to apply it to an identity: channel `r`
//! of `[1, in, in, 1]` is the unit impulse at input `r`, and resizing its height gives row `r` of
//! `Wᵀ` — every weight exactly as `B` computes it (align_corners, border clamping, filter
//! normalisation, the kernel's own float arithmetic). That costs `in × (in + out)` though.
//!
//! A resize output reads only a few neighbouring inputs (its taps). So one channel can hold many
//! impulses at once, `stride` inputs apart: as long as no output's taps reach two impulses of
//! the same channel, every output of that channel sees exactly one impulse and zeros, computes
//! the very same arithmetic as with the identity, and is decoded to one weight. `stride`
//! channels then give every weight, bit-identical to the identity's, for `stride × (in + out)`.
//! A check against the kernel's response to a constant input catches a window that was too
//! narrow, and the stride doubles until it passes (at `stride = in` it *is* the identity).

use burn_backend::ops::{InterpolateMode, InterpolateOptions};
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, TensorData, TensorMetadata};
use core::ops::Range;

/// The non-zero weights of one axis: for each output `o`, the first input it reads and the
/// weights of the inputs `first..first + weights.len()` (trimmed to the kernel's support).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AxisWeights {
    pub input: usize,
    pub columns: Vec<(usize, Vec<f64>)>,
    /// Peak bytes of device tensors alive while reading them (impulses + kernel response).
    pub read_bytes: u64,
}

impl AxisWeights {
    /// The weight output `o` gives input `i`.
    pub fn get(&self, o: usize, i: usize) -> f64 {
        let (first, weights) = &self.columns[o];
        i.checked_sub(*first)
            .and_then(|k| weights.get(k))
            .copied()
            .unwrap_or(0.0)
    }

    /// The inputs outputs `outputs` read.
    pub fn support(&self, outputs: Range<usize>) -> Range<usize> {
        let columns = &self.columns[outputs];
        let first = columns.iter().map(|(f, _)| *f).min().unwrap_or(0);
        let end = columns
            .iter()
            .map(|(f, w)| f + w.len())
            .max()
            .unwrap_or(first);
        first..end.max(first + 1).min(self.input)
    }
}

/// Where the taps of output `o` may land, widened by one input each side so that the kernel's
/// own rounding of the source coordinate cannot fall outside. Conservative: the weights read are
/// trimmed to the exact support, and [`read_axis`] verifies the window.
pub(crate) fn tap_window(
    o: usize,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
) -> Range<usize> {
    let (o, i, n) = (o as f64, input as f64, output as f64);
    let (source, before, after) = match options.mode {
        InterpolateMode::Nearest => ((o * i / n).floor(), 0.0, 0.0),
        _ => {
            let source = if options.align_corners {
                if output > 1 {
                    o * (i - 1.0) / (n - 1.0)
                } else {
                    0.0
                }
            } else {
                (o + 0.5) * (i / n) - 0.5
            };
            let (before, after) = match options.mode {
                InterpolateMode::Bilinear => (0.0, 1.0),
                InterpolateMode::Bicubic => (1.0, 2.0),
                _ => (2.0, 3.0), // Lanczos3: taps -2..=3
            };
            (source.floor(), before, after)
        }
    };
    let first = ((source - before - 1.0).max(0.0) as usize).min(input - 1);
    let last = ((source + after + 1.0).max(0.0) as usize).min(input - 1);
    first..last.max(first) + 1
}

/// Reads every weight of one axis (`input → output`) off `B::interpolate`, in `dtype`.
pub(crate) fn read_axis<B: Backend>(
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> AxisWeights {
    let windows: Vec<_> = (0..output)
        .map(|o| tap_window(o, input, output, options))
        .collect();
    let widest = windows.iter().map(|w| w.len()).max().unwrap_or(1);
    read_axis_with_stride::<B>(input, output, &windows, widest, options, dtype, device)
}

/// [`read_axis`] from a given first stride (tests start it too small on purpose).
pub(crate) fn read_axis_with_stride<B: Backend>(
    input: usize,
    output: usize,
    windows: &[Range<usize>],
    first_stride: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> AxisWeights {
    let size = dtype.size() as u64;
    let constant = respond::<B>(input, output, 1, |_, _| true, options, dtype, device);
    let mut read_bytes = 0;
    let mut decode = |stride: usize| {
        let response = respond::<B>(
            input,
            output,
            stride,
            |channel, i| i % stride == channel,
            options,
            dtype,
            device,
        );
        read_bytes = u64::max(read_bytes, (stride * (input + output)) as u64 * size);
        (0..output)
            .map(|o| {
                // With the full identity every input is its own channel: no window needed.
                let window = if stride == input {
                    0..input
                } else {
                    windows[o].clone()
                };
                let weights: Vec<f64> = window
                    .clone()
                    .map(|i| response[(i % stride) * output + o])
                    .collect();
                trim(window.start, weights)
            })
            .collect::<Vec<_>>()
    };
    let mut stride = first_stride.clamp(1, input);
    let columns = loop {
        let columns = decode(stride);
        if stride == input {
            break columns;
        }
        // A window too narrow shows up two ways: an impulse of the same channel outside the
        // window folds its weight onto an input inside it (then two different strides decode
        // differently), or a weight is missed altogether (then a column no longer sums to the
        // kernel's response to a constant input).
        let agree = decode((stride + 1).min(input)) == columns;
        let complete = columns.iter().enumerate().all(|(o, (_, w))| {
            let sum: f64 = w.iter().sum();
            (sum - constant[o]).abs() <= tolerance(dtype) * (1.0 + constant[o].abs())
        });
        if agree && complete {
            break columns;
        }
        stride = (stride * 2).min(input);
    };
    AxisWeights {
        input,
        columns,
        read_bytes,
    }
}

/// How far a sum of one output's weights may be from the kernel's response to a constant, in
/// units of `1 + |response|`: a few roundings of `dtype`.
fn tolerance(dtype: DType) -> f64 {
    let epsilon = match dtype {
        DType::F64 => f64::EPSILON,
        DType::F16 => 9.8e-4,
        DType::BF16 => 7.9e-3,
        _ => f32::EPSILON as f64,
    };
    16.0 * epsilon
}

/// Drops leading and trailing zero weights.
fn trim(first: usize, weights: Vec<f64>) -> (usize, Vec<f64>) {
    let start = weights.iter().position(|w| *w != 0.0).unwrap_or(0);
    let end = weights
        .iter()
        .rposition(|w| *w != 0.0)
        .map_or(start, |e| e + 1);
    (first + start, weights[start..end.max(start)].to_vec())
}

/// `B::interpolate` of `channels` impulse channels (`is_impulse(channel, input)`), as
/// `[channel][output]` f64 values read back to the host.
fn respond<B: Backend>(
    input: usize,
    output: usize,
    channels: usize,
    is_impulse: impl Fn(usize, usize) -> bool,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> Vec<f64> {
    let mut values = vec![0.0f32; channels * input];
    for channel in 0..channels {
        for i in 0..input {
            if is_impulse(channel, i) {
                values[channel * input + i] = 1.0;
            }
        }
    }
    let data = TensorData::new(values, [1, channels, input, 1]).convert_dtype(dtype);
    let mut impulses = B::float_from_data(data, device);
    if impulses.dtype() != dtype {
        impulses = B::float_cast(impulses, dtype.into());
    }
    to_host::<B>(B::interpolate(impulses, [output, 1], options.clone()))
}

/// A tensor's values as f64 on the host (a device sync: once per cache fill).
fn to_host<B: Backend>(tensor: FloatTensor<B>) -> Vec<f64> {
    let data = burn_backend::read_sync(B::float_into_data(tensor))
        .expect("reading interpolation weights back from the device");
    data.convert::<f64>()
        .to_vec::<f64>()
        .expect("float weights")
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use super::*;
    use burn::backend::ndarray::{NdArray, NdArrayDevice};

    fn identity_read(input: usize, output: usize, options: &InterpolateOptions) -> AxisWeights {
        let windows = vec![0..input; output];
        read_axis_with_stride::<NdArray>(
            input,
            output,
            &windows,
            input,
            options,
            DType::F32,
            &NdArrayDevice::Cpu,
        )
    }

    #[test]
    fn comb_read_equals_the_identity_read_bit_for_bit() {
        for mode in [
            InterpolateMode::Nearest,
            InterpolateMode::Bilinear,
            InterpolateMode::Bicubic,
            InterpolateMode::Lanczos3,
        ] {
            for align_corners in [false, true] {
                let options =
                    InterpolateOptions::new(mode.clone()).with_align_corners(align_corners);
                for (input, output) in [(1, 1), (1, 9), (9, 1), (37, 101), (101, 37), (64, 64)] {
                    let comb = read_axis::<NdArray>(
                        input,
                        output,
                        &options,
                        DType::F32,
                        &NdArrayDevice::Cpu,
                    );
                    let identity = identity_read(input, output, &options);
                    assert_eq!(
                        comb.columns, identity.columns,
                        "{options:?} {input}->{output}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_window_too_narrow_is_detected_and_widened() {
        let options = InterpolateOptions::new(InterpolateMode::Lanczos3).with_align_corners(false);
        let (input, output) = (40, 90);
        // Every window one input wide, stride 1: all impulses in one channel, badly folded.
        let narrow: Vec<_> = (0..output)
            .map(|o| (o * input / output)..(o * input / output + 1))
            .collect();
        let read = read_axis_with_stride::<NdArray>(
            input,
            output,
            &narrow,
            1,
            &options,
            DType::F32,
            &NdArrayDevice::Cpu,
        );
        assert_eq!(read.columns, identity_read(input, output, &options).columns);
    }
}
