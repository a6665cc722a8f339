//! Weights read off the inner backend's own forward kernel: the impulse channels go through
//! `B::interpolate`, and `burn-deterministic-core` decodes the response (see
//! [`burn_deterministic_core::decode_axis`] for how a few channels give every weight exactly).
//! A backend without a kernel for a mode gets the host reference kernel's weights instead.

use super::resampling;
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, TensorData, TensorMetadata};
use burn_deterministic_core::{comb, decode_axis, tap_windows, AxisWeights};
use core::ops::Range;

/// Reads every weight of one axis (`input → output`) off `B::interpolate`, in `dtype`.
///
/// A backend without a forward kernel for the mode (declared in its device profile's
/// [`crate::InterpolateKernels`]: Candle has none for bilinear, bicubic and lanczos3) gets its
/// weights from the host reference kernel instead (see [`host_reference`]); they are uploaded
/// to `B`'s device in `B`'s dtype like any other. `check_resize` has refused the resize already
/// where neither exists.
pub(crate) fn read_axis<B: Backend>(
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> AxisWeights {
    // The sizes passed `check_resize`, which holds the same windows (`AxisEstimate`).
    let windows = tap_windows(input, output, resampling(options))
        .expect("tap windows of a checked resize fit in host memory");
    let widest = windows.iter().map(|w| w.len()).max().unwrap_or(1);
    if has_forward_kernel::<B>(device, options) {
        read_axis_with_stride::<B>(input, output, &windows, widest, options, dtype, device)
    } else {
        host_reference::read_axis(input, output, &windows, widest, options, dtype)
    }
}

/// Whether `B` has a forward kernel for the mode on `device`, by its declared profile.
pub(crate) fn has_forward_kernel<B: Backend>(
    device: &B::Device,
    options: &InterpolateOptions,
) -> bool {
    crate::device::backend_profile::<B>(device)
        .interpolate_kernels
        .has_forward(&options.mode)
}

/// Whether a host reference kernel is compiled in (features `flex` or `ndarray`).
pub(crate) const HOST_REFERENCE: bool = cfg!(any(feature = "flex", feature = "ndarray"));

/// Weights read off a reference kernel on the host, for backends that have none for a mode:
/// flex (pure Rust, Burn's coordinate rules) when this crate's `flex` feature is on, else
/// ndarray (which has every forward mode).
mod host_reference {
    use super::*;

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
        _options: &InterpolateOptions,
        _dtype: DType,
    ) -> AxisWeights {
        unreachable!("check_resize refuses a mode without a kernel when no host reference exists")
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
    decode_axis(
        input,
        output,
        windows,
        first_stride,
        dtype.size(),
        |stride| respond::<B>(input, output, stride, options, dtype, device),
    )
}

/// `B::interpolate` of the impulse channels [`comb`]`(channels, input)`, as `[channel][output]`
/// f64 values read back to the host.
fn respond<B: Backend>(
    input: usize,
    output: usize,
    channels: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &B::Device,
) -> Vec<f64> {
    let impulses = comb(channels, input);
    let data = TensorData::new(impulses, [1, channels, input, 1]).convert_dtype(dtype);
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
    use burn_backend::ops::InterpolateMode;

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
