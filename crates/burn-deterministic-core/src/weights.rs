//! Every weight of one axis, decoded from the response of a backend's own forward kernel.
//!
//! The classic way to read a linear operator's matrix is to apply it to an identity: channel `r`
//! of `[1, in, in, 1]` is the unit impulse at input `r`, and resizing its height gives row `r` of
//! `Wᵀ` — every weight exactly as the kernel computes it (align_corners, border clamping, filter
//! normalisation, the kernel's own float arithmetic). That costs `in × (in + out)` though.
//!
//! A resize output reads only a few neighbouring inputs (its taps). So one channel can hold many
//! impulses at once, `stride` inputs apart ([`comb`]): as long as no output's taps reach two
//! impulses of the same channel, every output of that channel sees exactly one impulse and
//! zeros, computes the very same arithmetic as with the identity, and is decoded to one weight.
//! `stride` channels then give every weight, bit-identical to the identity's, for
//! `stride × (in + out)`. Two exact checks catch a window that was too narrow (a response where
//! no impulse of the channel lies in the window; a decoding that changes with the stride), and
//! the stride doubles until they pass (at `stride = in` it *is* the identity).

use crate::cost::reading_bytes;
use core::ops::Range;

/// The non-zero weights of one axis: for each output `o`, the first input it reads and the
/// weights of the inputs `first..first + weights.len()` (trimmed to the kernel's support).
#[derive(Debug, Clone, PartialEq)]
pub struct AxisWeights {
    /// Input size along the axis.
    pub input: usize,
    /// Per output: its first input and the weights from there on.
    pub columns: Vec<(usize, Vec<f64>)>,
    /// Peak bytes of device tensors alive while decoding them (impulses + kernel response).
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

    /// The exact input support of every output.
    pub fn supports(&self) -> Vec<Range<usize>> {
        (0..self.columns.len())
            .map(|o| self.support(o..o + 1))
            .collect()
    }
}

/// The impulse channels of a read with `stride` channels, as `[stride, input]` values: channel
/// `c` holds a unit impulse at every input `i` with `i % stride == c`.
pub fn comb(stride: usize, input: usize) -> Vec<f32> {
    let mut values = vec![0.0f32; stride * input];
    for i in 0..input {
        values[(i % stride) * input + i] = 1.0;
    }
    values
}

/// Every weight of one axis (`input → output`), given `respond(stride)`: the kernel's response
/// to [`comb`]`(stride, input)` resized along its length, as `[channel][output]` values.
///
/// `windows[o]` are the inputs output `o` may read (see [`crate::tap_window`]); `first_stride`
/// the first number of channels to try (the widest window, or less: tests start it too small
/// on purpose). `dtype_size` counts the bytes alive while reading (`read_bytes`).
pub fn decode_axis(
    input: usize,
    output: usize,
    windows: &[Range<usize>],
    first_stride: usize,
    dtype_size: usize,
    mut respond: impl FnMut(usize) -> Vec<f64>,
) -> AxisWeights {
    let mut read_bytes = 0;
    let mut decode = |stride: usize| {
        let response = respond(stride);
        read_bytes = u64::max(read_bytes, reading_bytes(stride, input, output, dtype_size));
        let windows = |o: usize| {
            // With the full identity every input is its own channel: no window needed.
            if stride == input {
                0..input
            } else {
                windows[o].clone()
            }
        };
        let complete = missed_taps(&response, stride, output, windows).is_none();
        let columns = (0..output)
            .map(|o| {
                let window = windows(o);
                let weights: Vec<f64> = window
                    .clone()
                    .map(|i| response[(i % stride) * output + o])
                    .collect();
                trim(window.start, weights)
            })
            .collect::<Vec<_>>();
        (columns, complete)
    };
    let mut stride = first_stride.clamp(1, input);
    let columns = loop {
        let (columns, complete) = decode(stride);
        if stride == input {
            break columns;
        }
        // A window too narrow shows up two ways: a tap outside the window whose channel has no
        // input inside it responds where nothing should ([`missed_taps`]), or its impulse folds
        // its weight onto the window's input of the same channel (then two different strides
        // decode differently). Both are exact comparisons: no tolerance for a dtype's rounding
        // to hide a weight in.
        if complete && decode((stride + 1).min(input)).0 == columns {
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

/// The first `(output, channel)` where the kernel's response to `stride` impulse channels is
/// non-zero although no input of that channel lies in the output's window: a tap outside the
/// window, which decoding would miss. `response` is `[channel][output]`.
fn missed_taps(
    response: &[f64],
    stride: usize,
    output: usize,
    window: impl Fn(usize) -> Range<usize>,
) -> Option<(usize, usize)> {
    (0..output).find_map(|o| {
        let window = window(o);
        if window.len() >= stride {
            return None; // every channel has an input in the window
        }
        let inside = |channel: usize| window.clone().any(|i| i % stride == channel);
        (0..stride)
            .find(|&channel| !inside(channel) && response[channel * output + o] != 0.0)
            .map(|channel| (o, channel))
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{tap_window, Mode, Resampling};

    /// A host kernel for the tests: half-pixel linear interpolation with clamped edges (the
    /// bilinear rule), applied to each channel of `[channels, input]`.
    fn linear_kernel(values: &[f32], channels: usize, input: usize, output: usize) -> Vec<f64> {
        let mut response = vec![0.0; channels * output];
        for c in 0..channels {
            for o in 0..output {
                let source = ((o as f64 + 0.5) * input as f64 / output as f64 - 0.5).max(0.0);
                let i0 = (source.floor() as usize).min(input - 1);
                let i1 = (i0 + 1).min(input - 1);
                let t = source - i0 as f64;
                let at = |i: usize| values[c * input + i] as f64;
                response[c * output + o] = at(i0) * (1.0 - t) + at(i1) * t;
            }
        }
        response
    }

    fn decode_linear(
        input: usize,
        output: usize,
        windows: &[Range<usize>],
        first: usize,
    ) -> AxisWeights {
        decode_axis(input, output, windows, first, 4, |stride| {
            linear_kernel(&comb(stride, input), stride, input, output)
        })
    }

    #[test]
    fn a_comb_read_equals_the_identity_read() {
        let bilinear = Resampling {
            mode: Mode::Bilinear,
            align_corners: false,
        };
        for (input, output) in [(1, 1), (1, 9), (9, 1), (37, 101), (101, 37)] {
            let windows: Vec<_> = (0..output)
                .map(|o| tap_window(o, input, output, bilinear))
                .collect();
            let widest = windows.iter().map(|w| w.len()).max().unwrap();
            let comb = decode_linear(input, output, &windows, widest);
            let identity = decode_linear(input, output, &vec![0..input; output], input);
            assert_eq!(comb.columns, identity.columns, "{input}->{output}");
            // The comb read holds fewer channels than the identity, when there is a choice.
            if input > widest + 1 {
                assert!(comb.read_bytes < identity.read_bytes, "{input}->{output}");
            }
        }
    }

    #[test]
    fn a_window_too_narrow_is_detected_and_widened() {
        let (input, output) = (40, 90);
        // Every window one input wide, stride 1: all impulses in one channel, badly folded.
        let narrow: Vec<_> = (0..output)
            .map(|o| (o * input / output)..(o * input / output + 1))
            .collect();
        let read = decode_linear(input, output, &narrow, 1);
        let identity = decode_linear(input, output, &vec![0..input; output], input);
        assert_eq!(read.columns, identity.columns);
        assert_eq!(read.supports().len(), output);
    }

    #[test]
    fn the_comb_puts_one_impulse_per_input() {
        let values = comb(3, 7);
        assert_eq!(values.iter().sum::<f32>(), 7.0);
        // Channel 1 holds inputs 1 and 4.
        assert_eq!(&values[7..14], &[0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    }

    /// A corrupted response (one tap outside an output's window) is caught exactly, however
    /// small the weight: no dtype tolerance applies.
    #[test]
    fn a_response_outside_the_window_is_a_missed_tap() {
        let (stride, output) = (4, 3);
        let windows = [0..2, 1..3, 2..4];
        let at = |channel: usize, o: usize| channel * output + o;
        // Channel c holds inputs c, c + 4, …: output 0's window (0, 1) reads channels 0 and 1.
        let mut response = vec![0.0; stride * output];
        response[at(0, 0)] = 0.75;
        response[at(1, 0)] = 0.25;
        assert_eq!(
            missed_taps(&response, stride, output, |o| windows[o].clone()),
            None
        );
        // bf16's epsilon / 16, f32's epsilon, a plain small weight.
        for tiny in [7.8125e-3 / 16.0, 2f64.powi(-23), 1e-3] {
            let mut corrupted = response.clone();
            corrupted[at(3, 0)] = tiny; // input 3 reaches output 0, outside its window
            assert_eq!(
                missed_taps(&corrupted, stride, output, |o| windows[o].clone()),
                Some((0, 3)),
                "{tiny}"
            );
        }
    }
}
