//! A bounded, thread-safe cache of axis maps, so a training loop builds each geometry's weights
//! once. Least-recently-used entries are evicted past `max_entries` or `max_bytes` (multi-scale
//! training creates a new size every step). Cached and freshly built weights are bit-identical,
//! so the cache never changes results, only cost.

use super::axis::{AxisMap, Layout};
use burn_backend::{Backend, DType, DeviceId, DeviceOps};
use serde::{Deserialize, Serialize};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

/// Counters and occupancy of the weight cache (all backends together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub entries: usize,
    pub bytes: u64,
    /// Largest `entries` / `bytes` ever held since the last [`reset_cache`].
    pub peak_entries: usize,
    pub peak_bytes: u64,
    /// Largest weight memory alive at once while building one axis map, measured from the
    /// tensors built (identity impulses, kernel output, kept blocks).
    pub peak_build_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    backend: TypeId,
    device: DeviceId,
    dtype: String,
    input: usize,
    output: usize,
    mode: String,
    align_corners: bool,
    layout: Layout,
}

impl CacheKey {
    pub(crate) fn new<B: Backend>(
        device: &B::Device,
        dtype: DType,
        input: usize,
        output: usize,
        options: &burn_backend::ops::InterpolateOptions,
        layout: Layout,
    ) -> Self {
        Self {
            backend: TypeId::of::<B>(),
            device: device.id(),
            dtype: format!("{dtype:?}"),
            input,
            output,
            mode: format!("{:?}", options.mode),
            align_corners: options.align_corners,
            layout,
        }
    }
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

static CACHE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(State::default))
}

/// The current counters.
pub fn cache_stats() -> CacheStats {
    with_state(|s| s.stats)
}

/// Drops every cached map and zeroes the counters.
pub fn reset_cache() {
    with_state(|s| *s = State::default());
}

/// The cached map for `key`, or `build()`'s, inserted within the bounds.
pub(crate) fn get_or_build<B: Backend>(
    key: CacheKey,
    max_entries: usize,
    max_bytes: u64,
    build: impl FnOnce() -> (AxisMap<B>, u64),
) -> AxisMap<B> {
    let hit = with_state(|s| {
        s.clock += 1;
        let now = s.clock;
        let entry = s.entries.get_mut(&key)?;
        entry.last_used = now;
        let map = entry.map.downcast_ref::<AxisMap<B>>()?.clone();
        s.stats.hits += 1;
        Some(map)
    });
    if let Some(map) = hit {
        return map;
    }
    // Built outside the lock: other threads keep using the cache meanwhile. Two threads may
    // build the same key; both get identical weights and the second insert is a no-op.
    let (map, build_bytes) = build();
    let bytes = map.bytes();
    with_state(|s| {
        s.stats.misses += 1;
        s.stats.peak_build_bytes = s.stats.peak_build_bytes.max(build_bytes);
        if max_entries == 0 || bytes > max_bytes || s.entries.contains_key(&key) {
            return;
        }
        s.clock += 1;
        let entry = Entry {
            map: Box::new(map.clone()),
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
    map
}
