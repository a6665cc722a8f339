//! The weight cache of this front door: one [`WeightCache`] (bounded, least-recently-used; see
//! `burn-deterministic-core`) holding the axis maps of every backend, keyed by backend type,
//! device, dtype, sizes, options and layout.

use super::apply::AxisMap;
use super::resampling;
use burn_backend::ops::InterpolateOptions;
use burn_backend::{Backend, DType, DeviceOps};
use burn_deterministic_core::{Built, CacheKey, Layout, WeightCache};
use std::any::TypeId;

pub use burn_deterministic_core::CacheStats;

static CACHE: WeightCache = WeightCache::new();

/// The current counters.
pub fn cache_stats() -> CacheStats {
    CACHE.stats()
}

/// Drops every cached map and zeroes the counters.
pub fn reset_cache() {
    CACHE.reset()
}

/// What one axis map of backend `B` depends on.
pub(crate) fn key<B: Backend>(
    device: &B::Device,
    dtype: DType,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    layout: Layout,
) -> CacheKey {
    let device = device.id();
    CacheKey::new(
        TypeId::of::<B>(),
        &device,
        &dtype,
        [input, output],
        resampling(options),
        layout,
    )
}

/// The cached map for `key`, or `build()`'s, inserted within the bounds.
pub(crate) fn get_or_build<B: Backend>(
    key: CacheKey,
    max_entries: usize,
    max_bytes: u64,
    build: impl FnOnce() -> (AxisMap<B>, u64),
) -> AxisMap<B> {
    CACHE.get_or_build(key, max_entries, max_bytes, || {
        let (map, peak_bytes) = build();
        Built {
            kept_bytes: map.cost().kept_bytes,
            map,
            peak_bytes,
        }
    })
}
