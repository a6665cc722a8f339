//! The resize as two matmuls with constant weights: `y[n, c] = Wh · x[n, c] · Wwᵀ`.
//!
//! This is mechanism (a), the crate's root: tensor ops only. Burn's autodiff differentiates the two
//! matmuls, so the backward is `dx[n, c] = Whᵀ · g[n, c] · Ww` — the exact adjoint, as GEMMs
//! of the backend, with no atomics and no accumulation order left to a scheduler.

use crate::config::DeterministicConfig;
use crate::weights::read_axis;
use crate::{Axis, ResizeError};
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor, TensorData};
#[cfg(any(feature = "extension-flex", feature = "extension-wgpu"))]
use burn_deterministic_core::{band_entries, band_shapes, AxisEstimate};
use burn_deterministic_core::{
    height_first, product, AxisWeights, Built, CacheKey, Layout, Mode, Resampling, WeightCache,
};
use std::any::TypeId;

pub use burn_deterministic_core::CacheStats;

static CACHE: WeightCache = WeightCache::new();

/// The weight cache's counters (hits, misses, bytes held, ...).
pub fn cache_stats() -> CacheStats {
    CACHE.stats()
}

/// Drops every cached weight matrix and zeroes the counters.
pub fn reset_cache() {
    CACHE.reset()
}

/// One axis of a resize: which one, and its input and output sizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AxisSizes {
    pub axis: Axis,
    pub input: usize,
    pub output: usize,
}

impl AxisSizes {
    /// The error for weights of this axis over the byte limit.
    fn too_large(self, layout: Layout, bytes: u64, limit: u64) -> ResizeError {
        ResizeError::WeightsTooLarge {
            axis: self.axis,
            input: self.input,
            output: self.output,
            layout: Some(layout),
            bytes,
            limit,
        }
    }

    /// The error for tap windows the host cannot hold.
    pub fn host_memory(self) -> ResizeError {
        ResizeError::HostMemory {
            axis: self.axis,
            input: self.input,
            output: self.output,
        }
    }
}

/// The output size of resizing `x` with `options`, and the axis maps `Wh: [P, H]`, `Ww: [Q, W]`
/// on `x`'s device in its dtype: what both mechanisms multiply by.
pub(crate) fn axis_maps(
    x: &Tensor<4>,
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Result<AxisMaps, ResizeError> {
    let [_, _, h, w] = x.dims();
    let [p, q] = crate::error::output_size(x.dims(), options)?;
    let (device, dtype) = (x.device(), x.dtype());
    Ok(AxisMaps {
        output: [p, q],
        height: axis_matrix(
            AxisSizes {
                axis: Axis::Height,
                input: h,
                output: p,
            },
            options,
            dtype,
            &device,
            config,
        )?,
        width: axis_matrix(
            AxisSizes {
                axis: Axis::Width,
                input: w,
                output: q,
            },
            options,
            dtype,
            &device,
            config,
        )?,
    })
}

/// [`axis_maps`]' result.
pub(crate) struct AxisMaps {
    /// `[P, Q]`.
    pub output: [usize; 2],
    /// `Wh: [P, H]`.
    pub height: Tensor<2>,
    /// `Ww: [Q, W]`.
    pub width: Tensor<2>,
}

/// `x: [N, C, H, W] → [N, C, P, Q]` as `Wh · x · Wwᵀ`, the axes in the engine's order
/// ([`height_first`]).
pub(crate) fn resize(x: Tensor<4>, maps: AxisMaps) -> Tensor<4> {
    let [_, _, h, w] = x.dims();
    let [p, q] = maps.output;
    let wh = maps.height.unsqueeze::<4>(); // [1, 1, P, H]
    let ww_t = maps.width.transpose().unsqueeze::<4>(); // [1, 1, W, Q]
    let (height_macs, width_macs) = (product(&[h, p]), product(&[w, q]));
    if height_first(height_macs, width_macs, true, [h, w], [p, q]) {
        wh.matmul(x).matmul(ww_t)
    } else {
        wh.matmul(x.matmul(ww_t))
    }
}

/// The dense map `W: [output, input]` of one axis, on `device` in `dtype`, from the cache or
/// read off Burn's kernel.
pub(crate) fn axis_matrix(
    sizes: AxisSizes,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
    config: &DeterministicConfig,
) -> Result<Tensor<2>, ResizeError> {
    let AxisSizes { input, output, .. } = sizes;
    let bytes = (input as u64)
        .checked_mul(output as u64)
        .and_then(|n| n.checked_mul(dtype.size() as u64));
    let limit = config.max_weight_bytes;
    if bytes.is_none_or(|bytes| bytes > limit) {
        return Err(sizes.too_large(Layout::Dense, bytes.unwrap_or(u64::MAX), limit));
    }
    cached(
        sizes,
        options,
        dtype,
        device,
        config,
        Layout::Dense,
        |weights, device| {
            let bytes = product(&[input, output, dtype.size()]);
            (dense(weights, output, dtype, device), bytes)
        },
    )
}

/// The band of one axis' `Wᵀ: [input, output]` (mechanism (b)'s banded adjoint), from blocks of
/// `block_size` outputs: its entries `[blocks, block, width]` on `device` in `dtype` and its
/// geometry (both from `burn-deterministic-core`), from the cache or read off Burn's kernel.
/// `estimate` is the axis' cost estimate (the caller's, which chose the layout from it).
#[cfg(any(feature = "extension-flex", feature = "extension-wgpu"))]
pub(crate) fn adjoint_band(
    sizes: AxisSizes,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
    config: &DeterministicConfig,
    block_size: usize,
    estimate: &AxisEstimate,
) -> Result<AdjointBand, ResizeError> {
    let AxisSizes { input, output, .. } = sizes;
    let layout = Layout::Banded { block_size };
    let bytes = estimate.peak_bytes(layout, dtype.size());
    if bytes > config.max_weight_bytes {
        return Err(sizes.too_large(layout, bytes, config.max_weight_bytes));
    }
    cached(
        sizes,
        options,
        dtype,
        device,
        config,
        layout,
        |weights, device| {
            let (_, adjoint) = band_shapes(block_size, input, output, &weights.supports());
            let entries = adjoint.entries(|i, o| weights.get(o, i));
            let dims = [adjoint.blocks, adjoint.block, adjoint.width];
            let band = AdjointBand {
                // Exact in `dtype`, as the dense map's entries.
                weights: Tensor::from_data(TensorData::new(entries, dims), (device, dtype)),
                shape: std::sync::Arc::new(adjoint),
            };
            let bytes = band_entries(&band.shape).saturating_mul(dtype.size() as u64);
            (band, bytes)
        },
    )
}

/// [`adjoint_band`]'s result.
#[cfg(any(feature = "extension-flex", feature = "extension-wgpu"))]
#[derive(Clone)]
pub(crate) struct AdjointBand {
    /// `[blocks, block, width]`.
    pub weights: Tensor<3>,
    pub shape: std::sync::Arc<burn_deterministic_core::BandShape>,
}

/// One axis' map in `layout` from the cache, or built by `build` from the weights read off
/// Burn's kernel (`build` returns the map and the bytes it keeps).
fn cached<V: Clone + Send + Sync + 'static>(
    sizes: AxisSizes,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
    config: &DeterministicConfig,
    layout: Layout,
    build: impl FnOnce(&AxisWeights, &Device) -> (V, u64),
) -> Result<V, ResizeError> {
    // Kept outside autodiff: combined with an autodiff `x`, a constant of the graph; one cached
    // map serves plain and autodiff tensors of the device.
    let device = &device.clone().inner();
    let resampling = resampling(options);
    let key = CacheKey::new(
        TypeId::of::<Tensor<2>>(),
        device,
        &dtype,
        [sizes.input, sizes.output],
        resampling,
        layout,
    );
    let (max_entries, max_bytes) = (config.cache_max_entries, config.cache_max_bytes);
    CACHE.get_or_build(key, max_entries, max_bytes, || {
        match read_axis(sizes, resampling, options, dtype, device) {
            Ok(weights) => {
                let (map, bytes) = build(&weights, device);
                Built {
                    map: Ok(map),
                    kept_bytes: bytes,
                    peak_bytes: bytes.max(weights.read_bytes),
                }
            }
            // A failed read is returned, never kept (over any byte bound).
            Err(error) => Built {
                map: Err(error),
                kept_bytes: u64::MAX,
                peak_bytes: 0,
            },
        }
    })
}

/// The decoded weights as a dense `[output, input]` tensor.
fn dense(weights: &AxisWeights, output: usize, dtype: DType, device: &Device) -> Tensor<2> {
    let input = weights.input;
    let mut values = vec![0.0f64; output * input];
    for (o, (first, taps)) in weights.columns.iter().enumerate() {
        values[o * input + first..][..taps.len()].copy_from_slice(taps);
    }
    // The weights were read in `dtype` and are exact in it: the conversion back is lossless.
    Tensor::from_data(TensorData::new(values, [output, input]), (device, dtype))
}

/// Burn 0.22's options as the core's per-axis resampling.
pub(crate) fn resampling(options: &InterpolateOptions) -> Resampling {
    let mode = match options.mode {
        InterpolateMode::Nearest => Mode::Nearest,
        InterpolateMode::NearestExact => Mode::NearestExact,
        InterpolateMode::Bilinear => Mode::Bilinear,
        InterpolateMode::Bicubic => Mode::Bicubic,
        InterpolateMode::Lanczos3 => Mode::Lanczos3,
    };
    Resampling {
        mode,
        align_corners: options.align_corners,
    }
}
