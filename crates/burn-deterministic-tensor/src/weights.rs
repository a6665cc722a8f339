//! Weights read off Burn's own forward kernel on the tensor's device: impulse channels go
//! through `burn::tensor::module::interpolate`, and `burn-deterministic-core` decodes the
//! response (see [`burn_deterministic_core::decode_axis`] for how a few channels give every
//! weight exactly). The same reading as the Burn 0.21 front door, with Burn 0.22's tensors.

use crate::ResizeError;
use burn::tensor::ops::InterpolateOptions;
use burn::tensor::{DType, Device, Tensor, TensorData};
use burn_deterministic_core::{comb, decode_axis, tap_windows, AxisWeights, Resampling};

/// Every weight of one axis (`input → output`) as Burn's kernel computes it in `dtype` on
/// `device` (a device without autodiff: the response is data, not part of a graph).
pub(crate) fn read_axis(
    input: usize,
    output: usize,
    resampling: Resampling,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
) -> Result<AxisWeights, ResizeError> {
    let too_large = ResizeError::TooLarge {
        rows: output,
        columns: input,
    };
    let windows = tap_windows(input, output, resampling).ok_or(too_large)?;
    let widest = windows.iter().map(|w| w.len()).max().unwrap_or(1);
    let read = || {
        decode_axis(input, output, &windows, widest, dtype.size(), |channels| {
            respond(input, output, channels, options, dtype, device)
        })
    };
    // A backend without a kernel for this mode and dtype panics on the first impulse, before
    // any state is shared (flex 0.22.1 has no nearest-exact); that becomes an error naming the
    // mode and dtype. Only reads that panicked are caught: the resize itself is never retried.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the kernel panicked".to_string());
        ResizeError::NoBackendKernel {
            mode: format!("{:?}", options.mode),
            dtype: format!("{dtype:?}"),
            reason,
        }
    })
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
