//! Weights read off Burn's own forward kernel on the tensor's device: impulse channels go
//! through `burn::tensor::module::interpolate`, and `burn-deterministic-core` decodes the
//! response (see [`burn_deterministic_core::decode_axis`] for how a few channels give every
//! weight exactly). The same reading as the Burn 0.21 front door, with Burn 0.22's tensors.

use crate::separable::AxisSizes;
use crate::ResizeError;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor, TensorData};
use burn_deterministic_core::{comb, decode_axis, tap_windows, AxisWeights, Resampling};

/// Every weight of one axis (`input → output`) as Burn's kernel computes it in `dtype` on
/// `device` (a device without autodiff: the response is data, not part of a graph).
pub(crate) fn read_axis(
    sizes: AxisSizes,
    resampling: Resampling,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
) -> Result<AxisWeights, ResizeError> {
    let AxisSizes { input, output, .. } = sizes;
    let windows = tap_windows(input, output, resampling).ok_or(sizes.host_memory())?;
    let widest = windows.iter().map(|w| w.len()).max().unwrap_or(1);
    if let Some((backend, detail)) = lacking_kernel(device, &options.mode, dtype) {
        return Err(ResizeError::NoKernel {
            mode: resampling.mode,
            dtype: format!("{dtype:?}"),
            backend: backend.into(),
            detail,
        });
    }
    Ok(decode_axis(
        input,
        output,
        &windows,
        widest,
        dtype.size(),
        |channels| respond(input, output, channels, options, dtype, device),
    ))
}

/// The backend behind `device` and why it has no forward kernel for `mode` in `dtype`, or
/// `None` if it has one. Declared from Burn 0.22.1's sources, never probed (a probe would have to catch the
/// kernel's panic, which a binary built with `panic = "abort"` cannot):
/// - flex (`burn-flex` `ops/module.rs`): nearest, bilinear, bicubic, lanczos3 in f32, f64, f16
///   and bf16; nothing else;
/// - ndarray (`burn-ndarray` `ops/module.rs`): every mode but nearest-exact;
/// - CubeCL (wgpu, cuda, rocm) and the others: every mode, in the dtypes they run.
///
/// The backend is told by the device's dispatch variant, as Burn 0.22.1 prints it.
fn lacking_kernel(
    device: &Device,
    mode: &InterpolateMode,
    dtype: DType,
) -> Option<(&'static str, &'static str)> {
    let backend = format!("{:?}", device.as_dispatch());
    let backend = backend
        .strip_prefix("Autodiff { device: ")
        .unwrap_or(&backend);
    if backend.starts_with("Flex(") {
        let mode_ok = !matches!(mode, InterpolateMode::NearestExact);
        let dtype_ok = matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
        return (!(mode_ok && dtype_ok)).then_some((
            "flex",
            "flex 0.22.1 interpolates nearest, bilinear, bicubic and lanczos3 in f32, f64, f16 \
             and bf16 only",
        ));
    }
    if backend.starts_with("NdArray(") && matches!(mode, InterpolateMode::NearestExact) {
        return Some(("ndarray", "ndarray 0.22.1 has no nearest-exact interpolate"));
    }
    None
}

/// Burn's `interpolate` of the impulse channels [`comb`]`(channels, input)` to `[output, 1]`,
/// as `[channel][output]` f64 values read back to the host (a device sync: once per cache fill).
fn respond(
    input: usize,
    output: usize,
    channels: usize,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
) -> Vec<f64> {
    let impulses = TensorData::new(comb(channels, input), [1, channels, input, 1]);
    let impulses = Tensor::<4>::from_data(impulses, (device, dtype));
    let options = InterpolateOptions {
        output_size: Some([output, 1]),
        scale_factor: None,
        ..options.clone()
    };
    burn::tensor::module::interpolate(impulses, options)
        .into_data_dtype(DType::F64)
        .try_to_vec::<f64>()
        .expect("interpolation weights read back as f64")
}
