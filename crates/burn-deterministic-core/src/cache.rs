//! A bounded, thread-safe cache of built axis maps, so a training loop builds each geometry's
//! weights once. Least-recently-used entries are evicted past `max_entries` or `max_bytes`
//! (multi-scale training creates a new size every step). Cached and freshly built weights are
//! bit-identical, so the cache never changes results, only cost. A front door keeps one
//! [`WeightCache`] in a `static` and stores its own map type in it.

use crate::{Layout, Resampling};
use serde::{Deserialize, Serialize};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

/// Counters and occupancy of a weight cache (all backends together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Lookups that found their map.
    pub hits: u64,
    /// Lookups that built their map.
    pub misses: u64,
    /// Maps dropped to stay within the bounds.
    pub evictions: u64,
    /// Maps held now.
    pub entries: usize,
    /// Bytes held now.
    pub bytes: u64,
    /// Largest `entries` ever held since the last reset.
    pub peak_entries: usize,
    /// Largest `bytes` ever held since the last reset.
    pub peak_bytes: u64,
    /// Largest weight memory alive at once while building one axis map, counted by the cost
    /// model from the shapes of the tensors built (impulses, kernel response, kept weights and
    /// gather indices).
    pub peak_build_bytes: u64,
}

/// Axis maps a front door's cache keeps at most, by default.
pub const DEFAULT_CACHE_MAX_ENTRIES: usize = 64;
/// Device bytes a front door's cached maps may hold together, by default.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 256 << 20;
/// The most bytes one axis' weights may take, by default: a map far beyond image sizes is
/// refused ([`crate::ResizeError::WeightsTooLarge`]) instead of exhausting the device. A dense
/// f32 map of 8192 × 8192 fits.
pub const DEFAULT_MAX_WEIGHT_BYTES: u64 = 256 << 20;

/// What an axis map depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The front door's backend type (maps of different backends never mix).
    pub backend: TypeId,
    /// The device, as the front door names it (its `Debug` form of the device id).
    pub device: String,
    /// The dtype's name.
    pub dtype: String,
    /// Input size along the axis.
    pub input: usize,
    /// Output size along the axis.
    pub output: usize,
    /// Mode and corner alignment.
    pub resampling: Resampling,
    /// Dense or banded.
    pub layout: Layout,
}

impl CacheKey {
    /// The key of one axis map: `backend` is the front door's backend type, `device` and
    /// `dtype` are named by their `Debug` forms.
    pub fn new(
        backend: TypeId,
        device: &dyn core::fmt::Debug,
        dtype: &dyn core::fmt::Debug,
        [input, output]: [usize; 2],
        resampling: Resampling,
        layout: Layout,
    ) -> Self {
        Self {
            backend,
            device: format!("{device:?}"),
            dtype: format!("{dtype:?}"),
            input,
            output,
            resampling,
            layout,
        }
    }
}

/// A map just built, with what it costs.
pub struct Built<V> {
    /// The map.
    pub map: V,
    /// Bytes the map keeps (counted against `max_bytes`).
    pub kept_bytes: u64,
    /// Bytes alive at once while building it.
    pub peak_bytes: u64,
}

struct Entry {
    map: Box<dyn Any + Send + Sync>,
    bytes: u64,
    last_used: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<CacheKey, Entry>,
    clock: u64,
    stats: CacheStats,
}

/// The cache (see the module docs).
pub struct WeightCache {
    state: Mutex<Option<State>>,
}

impl Default for WeightCache {
    fn default() -> Self {
        Self::new()
    }
}

impl WeightCache {
    /// An empty cache, unbounded until the first lookup sets its bounds.
    pub const fn new() -> Self {
        Self {
            state: Mutex::new(None),
        }
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(guard.get_or_insert_with(State::default))
    }

    /// The current counters.
    pub fn stats(&self) -> CacheStats {
        self.with_state(|s| s.stats)
    }

    /// Drops every cached map and zeroes the counters.
    pub fn reset(&self) {
        self.with_state(|s| *s = State::default());
    }

    /// The cached map for `key`, or `build()`'s, inserted within the bounds (a map over
    /// `max_bytes` alone, or any map with `max_entries = 0`, is returned and not kept).
    pub fn get_or_build<V: Clone + Send + Sync + 'static>(
        &self,
        key: CacheKey,
        max_entries: usize,
        max_bytes: u64,
        build: impl FnOnce() -> Built<V>,
    ) -> V {
        let hit = self.with_state(|s| {
            s.clock += 1;
            let now = s.clock;
            let entry = s.entries.get_mut(&key)?;
            entry.last_used = now;
            let map = entry.map.downcast_ref::<V>()?.clone();
            s.stats.hits += 1;
            Some(map)
        });
        if let Some(map) = hit {
            return map;
        }
        // Built outside the lock: other threads keep using the cache meanwhile. Two threads
        // may build the same key; both get identical weights and the second insert is a no-op.
        let built = build();
        let bytes = built.kept_bytes;
        self.with_state(|s| {
            s.stats.misses += 1;
            s.stats.peak_build_bytes = s.stats.peak_build_bytes.max(built.peak_bytes);
            if max_entries == 0 || bytes > max_bytes || s.entries.contains_key(&key) {
                return;
            }
            s.clock += 1;
            let entry = Entry {
                map: Box::new(built.map.clone()),
                bytes,
                last_used: s.clock,
            };
            s.entries.insert(key.clone(), entry);
            s.stats.bytes += bytes;
            while s.entries.len() > max_entries || s.stats.bytes > max_bytes {
                let oldest = s
                    .entries
                    .iter()
                    .filter(|(k, _)| **k != key)
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(k, _)| k.clone())
                    .expect("the new entry fits alone, so an older one exists");
                let evicted = s.entries.remove(&oldest).unwrap();
                s.stats.bytes -= evicted.bytes;
                s.stats.evictions += 1;
            }
            s.stats.entries = s.entries.len();
            s.stats.peak_entries = s.stats.peak_entries.max(s.stats.entries);
            s.stats.peak_bytes = s.stats.peak_bytes.max(s.stats.bytes);
        });
        built.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;

    fn key(input: usize) -> CacheKey {
        CacheKey {
            backend: TypeId::of::<u8>(),
            device: "cpu".into(),
            dtype: "F32".into(),
            input,
            output: 2 * input,
            resampling: Resampling {
                mode: Mode::Bilinear,
                align_corners: false,
            },
            layout: Layout::Dense,
        }
    }

    fn built(value: usize, bytes: u64) -> Built<usize> {
        Built {
            map: value,
            kept_bytes: bytes,
            peak_bytes: 2 * bytes,
        }
    }

    #[test]
    fn a_hit_returns_the_kept_map_without_building() {
        let cache = WeightCache::new();
        assert_eq!(cache.get_or_build(key(1), 4, 100, || built(7, 10)), 7);
        let again =
            cache.get_or_build(key(1), 4, 100, || -> Built<usize> { panic!("built twice") });
        assert_eq!(again, 7);
        let stats = cache.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.entries, stats.bytes),
            (1, 1, 1, 10)
        );
        assert_eq!(stats.peak_build_bytes, 20);
        cache.reset();
        assert_eq!(cache.stats(), CacheStats::default());
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let cache = WeightCache::new();
        for input in 1..=3 {
            cache.get_or_build(key(input), 3, 30, || built(input, 10));
        }
        cache.get_or_build(key(1), 3, 30, || built(0, 10)); // a hit: 1 is now the newest
        cache.get_or_build(key(4), 3, 30, || built(4, 10)); // over 30 bytes: evicts 2
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes, stats.evictions), (3, 30, 1));
        assert_eq!(
            cache.get_or_build(key(1), 3, 30, || built(0, 10)),
            1,
            "kept"
        );
        assert_eq!(
            cache.get_or_build(key(2), 3, 30, || built(9, 10)),
            9,
            "rebuilt"
        );
    }

    #[test]
    fn a_map_over_the_limit_is_returned_but_not_kept() {
        let cache = WeightCache::new();
        assert_eq!(cache.get_or_build(key(1), 3, 5, || built(1, 10)), 1);
        assert_eq!(cache.get_or_build(key(2), 0, 100, || built(2, 1)), 2);
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.misses), (0, 2));
    }
}
