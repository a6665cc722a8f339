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
//! Two exact checks catch a window that was too narrow (a response where no impulse of the
//! channel lies in the window; a decoding that changes with the stride), and the stride doubles
//! until they pass (at `stride = in` it *is* the identity).

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
///
/// A backend without a forward kernel for the mode (Candle has none for bilinear, bicubic and
/// lanczos3: it panics) gets its weights from the host reference kernel instead (see
/// [`host_reference`]); they are uploaded to `B`'s device in `B`'s dtype like any other. The
/// panic is caught once per backend and mode, silently, and remembered.
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
    let lacking = (core::any::type_name::<B>(), format!("{:?}", options.mode));
    if !host_reference::lacks_kernel(&lacking) {
        let read = host_reference::catch_silently(|| {
            read_axis_with_stride::<B>(input, output, &windows, widest, options, dtype, device)
        });
        match read {
            Ok(weights) => return weights,
            Err(message) => host_reference::note_lacking(lacking, &B::name(device), &message),
        }
    }
    host_reference::read_axis(input, output, &windows, widest, options, dtype)
}

/// Weights read off a reference kernel on the host, for backends that have none for a mode:
/// flex (pure Rust, Burn's coordinate rules) when this crate's `flex` feature is on, else
/// ndarray (which has every forward mode).
mod host_reference {
    use super::*;
    use std::cell::Cell;
    use std::sync::{Mutex, Once};

    static LACKING: Mutex<Vec<(&'static str, String)>> = Mutex::new(Vec::new());

    pub(super) fn lacks_kernel(key: &(&'static str, String)) -> bool {
        LACKING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(key)
    }

    pub(super) fn note_lacking(key: (&'static str, String), backend: &str, message: &str) {
        let mut lacking = LACKING.lock().unwrap_or_else(|e| e.into_inner());
        if !lacking.contains(&key) {
            eprintln!(
                "burn-deterministic: {backend} has no {} interpolate kernel to read weights off \
                 ({message}); reading them off the host reference kernel instead",
                key.1.to_lowercase()
            );
            lacking.push(key);
        }
    }

    thread_local! {
        static SILENT: Cell<bool> = const { Cell::new(false) };
    }

    /// Runs `f`, turning a panic into its message, without the panic hook printing it (only on
    /// this thread, and only while `f` runs: other threads' panics print as usual).
    pub(super) fn catch_silently<R>(f: impl FnOnce() -> R) -> Result<R, String> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !SILENT.with(Cell::get) {
                    previous(info);
                }
            }));
        });
        SILENT.with(|s| s.set(true));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        SILENT.with(|s| s.set(false));
        result.map_err(|payload| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into())
        })
    }

    #[cfg(feature = "flex")]
    type Reference = burn::backend::Flex;
    #[cfg(all(feature = "ndarray", not(feature = "flex")))]
    type Reference = burn::backend::NdArray;

    #[cfg(any(feature = "flex", feature = "ndarray"))]
    pub(super) fn read_axis(
        input: usize,
        output: usize,
        windows: &[Range<usize>],
        widest: usize,
        options: &InterpolateOptions,
        dtype: DType,
    ) -> AxisWeights {
        let device = Default::default();
        // The reference computes in the tensor's dtype where it can (flex: f16, bf16, f32,
        // f64), else in f32.
        let dtype = if Reference::supports_dtype(&device, dtype) {
            dtype
        } else {
            DType::F32
        };
        let mut weights = read_axis_with_stride::<Reference>(
            input, output, windows, widest, options, dtype, &device,
        );
        weights.read_bytes = 0; // nothing of it lives on `B`'s device
        weights
    }

    #[cfg(not(any(feature = "flex", feature = "ndarray")))]
    pub(super) fn read_axis(
        _input: usize,
        _output: usize,
        _windows: &[Range<usize>],
        _widest: usize,
        options: &InterpolateOptions,
        _dtype: DType,
    ) -> AxisWeights {
        panic!(
            "burn-deterministic interpolate: the backend has no {:?} kernel to read weights \
             off, and no host reference kernel is compiled in: enable burn-deterministic's \
             `flex` (or `ndarray`) feature",
            options.mode
        )
    }
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
        read_bytes = u64::max(
            read_bytes,
            super::axis::product(&[stride, input + output]) * size,
        );
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
