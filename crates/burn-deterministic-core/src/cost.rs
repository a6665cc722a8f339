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

/// When a banded layout is worth it, by multiply-adds: the front doors' `auto` layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandPolicy {
    /// Outputs per block of the banded layout (≥ 1; `1` keeps windows exact).
    pub block_size: usize,
    /// Banded when `dense MACs ≥ min_gain × banded MACs` (> 0).
    pub min_gain: f64,
}

impl Default for BandPolicy {
    /// Blocks of 64 outputs, banded from a 16× saving: on a 4× upsample of 128-wide axes (6.7×
    /// fewer multiply-adds) the banded forward measured as fast as dense on flex 0.21 and 1.5×
    /// slower on ndarray (its width pass is a batch of thin GEMMs); it wins clearly only on
    /// large axes and in the backward.
    fn default() -> Self {
        Self {
            block_size: 64,
            min_gain: 16.0,
        }
    }
}

impl BandPolicy {
    /// The bar for a backward that multiplies by the adjoint map (the Burn 0.22 front door's
    /// mechanism (b)): blocks of 64 outputs, banded from an 8× saving, chosen with the
    /// `front_door` bench's `adjoint_layouts` group (4× bilinear upsamples, forward + backward,
    /// banded against dense where the band saves 3×, 6.4× and 12.8× the multiply-adds): at 12.8×
    /// banded won on flex and on wgpu (llvmpipe), at 3× it lost on llvmpipe.
    pub fn adjoint() -> Self {
        Self {
            min_gain: 8.0,
            ..Self::default()
        }
    }

    /// The banded layout with this policy's blocks.
    pub fn banded(&self) -> Layout {
        Layout::Banded {
            block_size: self.block_size,
        }
    }

    /// Whether the banded layout saves at least `min_gain`× the dense multiply-adds on this
    /// axis.
    pub fn saves(&self, estimate: &AxisEstimate, dtype_size: usize) -> bool {
        let dense = estimate.cost(Layout::Dense, dtype_size).macs;
        let banded = estimate.cost(self.banded(), dtype_size).macs;
        dense as f64 >= self.min_gain * banded as f64
    }
}

/// Whether a separable pass taking `[h, w]` planes to `[p, q]` resizes the height axis first,
/// given each axis map's multiply-adds per column of the other axis (`Cost::macs`) and whether
/// both maps are dense. The forward goes from the input size to the output size, the adjoint
/// back. Either order is a fixed sequence of GEMMs, so both are reproducible; this only picks
/// the cheaper, the same way in every front door.
///
/// Two dense maps: the order with fewer multiply-adds (the height first on a tie). With a banded
/// map the multiply-adds are few and memory traffic decides: a banded width pass is a batch of
/// thin GEMMs over every row, so it runs where the planes have fewer rows (measured on flex
/// 0.21 for `[8, 19, 128, 128] → [512, 512]`: a banded width pass over 512 rows costs 4× one
/// over 128 rows, while the banded height pass writes its output in one piece either way).
pub fn height_first(
    height_macs: u64,
    width_macs: u64,
    both_dense: bool,
    [h, w]: [usize; 2],
    [p, q]: [usize; 2],
) -> bool {
    let (mh, mw) = (height_macs as u128, width_macs as u128);
    let fewer_macs = mh * w as u128 + mw * p as u128 <= mw * h as u128 + mh * q as u128;
    if both_dense || p == h {
        fewer_macs
    } else {
        p < h
    }
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

    /// Dense maps: the order with fewer multiply-adds, the height first on a tie; banded: the
    /// width pass where the planes have fewer rows.
    #[test]
    fn the_pass_order_counts_multiply_adds_or_rows() {
        let dense = |input: usize, output: usize| Cost::dense(input, output, F32).macs;
        // [32, 64] → [128, 64]: the height first costs 32·128·64 + 64·64·128 multiply-adds, the
        // width first (on 32 rows) 64·64·32 + 32·128·64: fewer.
        let (from, to) = ([32, 64], [128, 64]);
        assert!(!height_first(dense(32, 128), dense(64, 64), true, from, to));
        assert!(height_first(dense(128, 32), dense(64, 64), true, to, from));
        // A square resize is a tie: the height first.
        assert!(height_first(
            dense(16, 64),
            dense(16, 64),
            true,
            [16, 16],
            [64, 64]
        ));
        // Banded: the height first when it shrinks the rows, whatever the counts say.
        assert!(height_first(1, 1_000_000, false, [512, 512], [128, 128]));
        assert!(!height_first(1_000_000, 1, false, [128, 128], [512, 512]));
    }

    #[test]
    fn the_band_policy_takes_banded_only_for_a_large_saving() {
        let bilinear = Resampling {
            mode: Mode::Bilinear,
            align_corners: false,
        };
        let policy = BandPolicy::default();
        // 4× upsample of a 128 axis: ~7× fewer multiply-adds, under the 16× bar.
        assert!(!policy.saves(&AxisEstimate::new(128, 512, bilinear).unwrap(), F32));
        // Of a 1024 axis: ~56× fewer.
        assert!(policy.saves(&AxisEstimate::new(1024, 4096, bilinear).unwrap(), F32));
        let eager = BandPolicy {
            block_size: 8,
            min_gain: 2.0,
        };
        assert!(eager.saves(&AxisEstimate::new(128, 512, bilinear).unwrap(), F32));
        assert_eq!(eager.banded(), Layout::Banded { block_size: 8 });
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

    /// The adjoint's bar bands a 4× bilinear upsample of a 256-wide axis (12.8× fewer
    /// multiply-adds: faster banded on flex and llvmpipe) and not of a 128-wide one (6.4×: slower
    /// banded on llvmpipe); the forward's 16× bar bands neither.
    #[test]
    fn the_adjoint_bar_bands_from_an_eight_fold_saving() {
        let bilinear = Resampling {
            mode: Mode::Bilinear,
            align_corners: false,
        };
        let estimate = |size: usize| AxisEstimate::new(size, 4 * size, bilinear).unwrap();
        let (adjoint, forward) = (BandPolicy::adjoint(), BandPolicy::default());
        assert_eq!(adjoint.block_size, forward.block_size);
        assert!(adjoint.saves(&estimate(256), F32));
        assert!(!adjoint.saves(&estimate(128), F32));
        assert!(!forward.saves(&estimate(256), F32));
    }
}
