//! The cost model: the one place that counts what an axis map costs, from its geometry alone —
//! the forward's multiply-adds and the bytes kept on the device. A front door's layout choice
//! and size checks, the cache's accounting and the weight decoding's peak all read it; nothing
//! else counts bytes. Element sizes are in bytes (`dtype_size`), so no dtype type is needed.
//!
//! Sizes multiply as saturating `u64` ([`product`]): a count that would not fit is "over any
//! limit", never a wrapped small number.

use crate::geometry::{band_shapes, BandShape, Layout};
use crate::{tap_windows, Resampling};
use core::ops::Range;

/// What one axis map costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Multiply-adds of the forward per column of the other axis (the adjoint's are about the
    /// same: its band has the same aspect).
    pub macs: u64,
    /// Bytes the map keeps on the device: weights in the dtype, plus gather indices.
    pub kept_bytes: u64,
}

impl Cost {
    /// `W: [output, input]` stored whole (once: the adjoint multiplies by its transpose).
    pub fn dense(input: usize, output: usize, dtype_size: usize) -> Self {
        Self {
            macs: product(&[input, output]),
            kept_bytes: product(&[input, output, dtype_size]),
        }
    }

    /// The bands of `W` (`forward`) and of `Wᵀ` (`adjoint`).
    pub fn banded(forward: &BandShape, adjoint: &BandShape, dtype_size: usize) -> Self {
        Self {
            macs: band_entries(forward),
            kept_bytes: band_bytes(forward, dtype_size)
                .saturating_add(band_bytes(adjoint, dtype_size)),
        }
    }
}

/// Weights a band holds, `blocks × block × width`: also its multiply-adds per column of the
/// other axis.
pub fn band_entries(shape: &BandShape) -> u64 {
    product(&[shape.blocks, shape.block, shape.width])
}

/// A band's weights (`dtype_size` bytes each) and, for gathered windows, the gather's indices (counted as
/// i64, the widest integer element of Burn's backends: an upper bound).
fn band_bytes(shape: &BandShape, dtype_size: usize) -> u64 {
    let indices = match shape.stride {
        Some(_) => 0,
        None => product(&[shape.blocks, shape.width, 8]),
    };
    band_entries(shape)
        .saturating_mul(dtype_size as u64)
        .saturating_add(indices)
}

/// Bytes alive on the device while reading an axis' weights off the kernel with `channels`
/// impulse channels: the impulses `[channels, input]` and the response `[channels, output]`.
pub fn reading_bytes(channels: usize, input: usize, output: usize, dtype_size: usize) -> u64 {
    product(&[channels, input.saturating_add(output), dtype_size])
}

/// The product of sizes as `u64`, saturating: a count of bytes or multiply-adds that is
/// compared with a limit, where saturation means "over any limit", never a wrapped small
/// number (on 32-bit targets a `usize` product wraps well before a resize is absurd).
pub fn product(factors: &[usize]) -> u64 {
    factors
        .iter()
        .fold(1u64, |acc, &f| acc.saturating_mul(f as u64))
}

/// What one axis' layouts would cost before any weight is read, from the conservative tap
/// windows: computed once per resize check, then asked for each layout.
pub struct AxisEstimate {
    input: usize,
    output: usize,
    /// The inputs each output may read.
    taps: Vec<Range<usize>>,
}

impl AxisEstimate {
    /// `None` when the host cannot hold the per-output windows (an absurd size with a raised
    /// `max_weight_bytes`; see [`tap_windows`]).
    pub fn new(input: usize, output: usize, resampling: Resampling) -> Option<Self> {
        Some(Self {
            input,
            output,
            taps: tap_windows(input, output, resampling)?,
        })
    }

    /// The map's cost in `layout` (the windows of the built map are the exact supports, never
    /// wider than these).
    pub fn cost(&self, layout: Layout, dtype_size: usize) -> Cost {
        match layout {
            Layout::Dense => Cost::dense(self.input, self.output, dtype_size),
            Layout::Banded { block_size } => {
                let (forward, adjoint) =
                    band_shapes(block_size, self.input, self.output, &self.taps);
                Cost::banded(&forward, &adjoint, dtype_size)
            }
        }
    }

    /// The most bytes on the device at once for this axis in `layout` (an upper bound): what is
    /// kept, or what reading the weights off the kernel holds (one impulse channel per input an
    /// output may read, and one more), whichever is larger.
    pub fn peak_bytes(&self, layout: Layout, dtype_size: usize) -> u64 {
        let widest = self.taps.iter().map(|w| w.len()).max().unwrap_or(1);
        let channels = (widest + 1).min(self.input);
        let reading = reading_bytes(channels, self.input, self.output, dtype_size);
        self.cost(layout, dtype_size).kept_bytes.max(reading)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;

    const F32: usize = 4;
    const F16: usize = 2;

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
        assert_eq!(reading_bytes(2, usize::MAX, 1, F32), u64::MAX);
    }

    #[test]
    fn banded_cost_grows_with_taps_not_size() {
        let bilinear = Resampling {
            mode: Mode::Bilinear,
            align_corners: false,
        };
        let estimate = AxisEstimate::new(1024, 4096, bilinear).unwrap();
        let dense = estimate.cost(Layout::Dense, F32);
        let banded = estimate.cost(Layout::Banded { block_size: 64 }, F32);
        assert_eq!(dense.macs, 1024 * 4096);
        assert_eq!(dense.kept_bytes, 1024 * 4096 * 4);
        // 64 outputs read ~16 inputs plus the halo: far below the dense 1024 per output.
        assert!(banded.macs <= 4096 * 24, "{banded:?}");
        // Both bands (W's and Wᵀ's) hold about as many weights as the forward multiplies.
        assert!(banded.kept_bytes <= 3 * banded.macs * 4, "{banded:?}");
    }

    /// Counted by hand for a 2× bilinear upsample, `4 → 8`, blocks of 4 outputs.
    #[test]
    fn band_bytes_count_weights_and_gather_indices() {
        let forward: Vec<Range<usize>> = (0..8).map(|o| o / 2..(o / 2 + 2).min(4)).collect();
        let (f, a) = band_shapes(4, 4, 8, &forward);
        // Forward: 2 blocks × 4 rows × a 3-column window (uniform, step 2: no indices).
        assert!(f.stride.is_some());
        assert_eq!(band_entries(&f), 2 * 4 * f.width as u64);
        // Adjoint: 2 blocks × 2 rows × 6 columns, gathered: 2 × 6 i64 indices.
        assert_eq!((a.blocks, a.block, a.width), (2, 2, 6));
        let cost = Cost::banded(&f, &a, F16);
        assert_eq!(cost.macs, band_entries(&f));
        assert_eq!(
            cost.kept_bytes,
            band_entries(&f) * 2 + (2 * 2 * 6) * 2 + 2 * 6 * 8
        );
    }

    /// Reading the weights can need more than they keep: for a tiny output, the impulses of
    /// a large input dominate, and the estimate says so.
    #[test]
    fn the_peak_includes_reading_the_weights() {
        let bicubic = Resampling {
            mode: Mode::Bicubic,
            align_corners: false,
        };
        let estimate = AxisEstimate::new(1000, 1, bicubic).unwrap();
        let banded = Layout::Banded { block_size: 64 };
        let kept = estimate.cost(banded, F32).kept_bytes;
        assert!(estimate.peak_bytes(banded, F32) > kept);
        let dense = estimate.cost(Layout::Dense, F32).kept_bytes;
        assert_eq!(dense, 1000 * 4);
    }
}
