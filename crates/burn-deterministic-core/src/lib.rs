//! The engine of `burn-deterministic` that does not depend on Burn: everything about a separable
//! resize that is arithmetic on sizes and weights, not tensors.
//!
//! A 2-D resize of `x: [N, C, H, W]` to `[N, C, P, Q]` is, per axis, a linear map: for every
//! mode Burn implements, `y[n, c] = Wh · x[n, c] · Wwᵀ` with `Wh: [P, H]` and `Ww: [Q, W]`; its
//! adjoint is `dx[n, c] = Whᵀ · g[n, c] · Ww`. The front doors (`burn-deterministic` for Burn
//! 0.21, a backend decorator; a tensor-level crate for Burn 0.22 and later) hold the tensors and
//! run the GEMMs. This crate gives them, for one axis:
//!
//! - [`tap_window`], [`tap_windows`]: where an output's taps may land, before any weight is
//!   known;
//! - [`decode_axis`]: every weight of `W`, decoded from the response of the backend's own
//!   kernel to a few impulse channels ([`comb`]), checked exactly;
//! - [`BandShape`] and [`band_shapes`]: the banded layout of `W` and `Wᵀ`;
//! - [`Cost`] and [`AxisEstimate`]: the one count of bytes and multiply-adds; [`BandPolicy`]
//!   and [`height_first`]: the layout and pass-order choices made from it;
//! - [`WeightCache`]: built maps kept per geometry, bounded;
//! - [`ResizeError`]: what a resize refuses, the one error both front doors return;
//! - [`config`]: the one configuration both front doors read (scoped, process, environment);
//! - [`autotune`]: the CubeCL autotune hazard, its notice and the `strict` rule;
//! - [`PairwisePlan`]: a fixed order for adding values that share a key (scatter-add, the
//!   backward of gather), run by the front doors as passes in which no place receives more
//!   than two values; [`element_keys`], [`row_keys`], [`tuple_keys`] and [`IndexError`]: the
//!   keys of an indexing op, checked; [`corner_samples`]: where a deformable convolution's
//!   samples read;
//! - [`training`]: the Burn-free bookkeeping of both training toolkits (resuming, epoch seeds,
//!   plain progress lines).
//!
//! **Not a stable API.** This crate is an implementation detail of the front doors, which
//! depend on it with an exact version; its items may change in any release.
//!
//! ```rust
//! use burn_deterministic_core::{tap_window, Mode, Resampling};
//!
//! // A 2x bilinear upsample with half-pixel centres: output 5 reads inputs 2 and 3; its window
//! // (where taps may land, known before any weight is) is a little wider.
//! let bilinear = Resampling { mode: Mode::Bilinear, align_corners: false };
//! assert_eq!(tap_window(5, 8, 16, bilinear), 1..5);
//! ```

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod autotune;
mod cache;
pub mod check;
pub mod config;
mod cost;
mod deform;
mod error;
mod geometry;
mod indexing;
mod pairwise;
pub mod report;
mod taps;
pub mod trace;
pub mod training;
mod weights;

pub use cache::{
    Built, CacheKey, CacheStats, WeightCache, DEFAULT_CACHE_MAX_BYTES, DEFAULT_CACHE_MAX_ENTRIES,
    DEFAULT_MAX_WEIGHT_BYTES,
};
pub use cost::{
    band_entries, height_first, product, reading_bytes, AxisEstimate, BandPolicy, Cost,
};
pub use deform::{corner_samples, DeformGeometry, SampleFloat};
pub use error::{Axis, ResizeError};
pub use geometry::{band_shapes, ranges_along, BandShape, Layout, Stride};
pub use indexing::{element_keys, row_keys, tuple_keys, IndexError};
pub use pairwise::{PairwiseLevel, PairwisePlan};
pub use taps::{tap_window, tap_windows};
pub use weights::{comb, decode_axis, AxisWeights};

/// Elements each output of one level of the fixed-order sum adds in sequence (both front
/// doors build the same tree: rows of this many consecutive elements summed per axis, then
/// rows of the partial sums, until one value is left). 4096 keeps a level's outputs numerous
/// enough to fill a GPU for large tensors (1 Mi elements: 256 outputs) and a sequence short
/// enough that one unit finishes fast; a 2³² element tensor needs three levels.
pub const FIXED_ORDER_ROW: usize = 4096;

/// The interpolation algorithm of one axis (the union of what Burn's versions implement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `floor(o · in / out)`: Burn's (and OpenCV's legacy) nearest.
    Nearest,
    /// `floor((o + ½) · in / out)`: PyTorch's `nearest-exact` (Burn 0.22 and later).
    NearestExact,
    /// Linear in each axis (2 taps; Burn's `Bilinear`).
    Bilinear,
    /// Cubic convolution, `a = -0.75` (4 taps; Burn's `Bicubic`).
    Bicubic,
    /// Lanczos windowed sinc, `a = 3` (6 taps; Burn's `Lanczos3`).
    Lanczos3,
}

/// What an axis' weights depend on besides its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resampling {
    /// The interpolation algorithm.
    pub mode: Mode,
    /// Input and output aligned by their corner pixels, else half-pixel centres.
    pub align_corners: bool,
}
