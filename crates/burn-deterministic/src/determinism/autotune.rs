//! CubeCL autotune: detected, announced once, refused under `strict`, or pinned to one cache.
//!
//! With Burn's default features, wgpu and cuda pick matmul, convolution and reduction kernels
//! by timing candidates on first use and caching the fastest per shape key (`target/autotune`
//! by default). Candidates add in different orders, so two processes that start with different
//! caches can compute different bits. Burn 0.21 / CubeCL 0.10 have no run-time switch to turn
//! it off (`CUBECL_AUTOTUNE_LEVEL` only changes how hard it tries). What can be done:
//! - build Burn without its `autotune` feature (then each op has one fixed kernel): the fix;
//! - share one cache directory between runs ([`use_autotune_cache_dir`]): processes that read
//!   the same filled cache pick the same kernels;
//! - and never let it pass silently: the decorator says so once on stderr at first use on an
//!   autotuned device, or refuses to run with `strict: true`.

use burn_backend::Backend;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether CubeCL backends in this build autotune. Cargo unifies features per build, so this
/// holds for every CubeCL backend of the process. Read off burn-cubecl's convolution strategy,
/// whose default is `Autotune` exactly when its `autotune` feature is compiled in.
#[cfg(any(feature = "wgpu", feature = "cuda", feature = "rocm"))]
pub(crate) fn compiled_in() -> bool {
    use burn_cubecl::kernel::conv::ConvStrategy;
    !matches!(
        ConvStrategy::default(),
        ConvStrategy::Direct | ConvStrategy::ImplicitGemm
    )
}

/// Bits on an autotuned device can depend on CubeCL's autotune cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutotuneHazard {
    /// `B::name(device)` of the backend that autotunes.
    pub backend: String,
}

impl core::fmt::Display for AutotuneHazard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "burn-deterministic: {} is built with CubeCL autotune (Burn's default `autotune` \
             feature): matmul, convolution and reduction kernels are chosen by timing on first \
             use and cached in target/autotune, and the candidates add in different orders, so \
             results can differ between processes that start with different autotune caches.\n\
             For bit-reproducible runs, build Burn without autotune:\n    \
             burn = {{ version = \"=0.21.0\", default-features = false, features = [\"std\", \
             \"autodiff\", \"wgpu\"] }}   # or \"cuda\"; add the other features you use\n\
             or share one filled cache between runs with \
             burn_deterministic::determinism::use_autotune_cache_dir(..). \
             The configuration's `\"strict\": true` turns this notice into an error.",
            self.backend
        )
    }
}

impl std::error::Error for AutotuneHazard {}

/// `Err` when bits on `device` can depend on the autotune cache. Call it before training to
/// fail early instead of at the first tensor (what `strict` does).
pub fn check<B: Backend>(device: &B::Device) -> Result<(), AutotuneHazard> {
    if crate::device_profile(device).autotuned {
        Err(AutotuneHazard {
            backend: B::name(device),
        })
    } else {
        Ok(())
    }
}

static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Called by the decorator when it creates a tensor or resizes on `device`: on an autotuned
/// device, prints [`AutotuneHazard`] once per process, or panics with it under `strict`.
pub(crate) fn on_use<B: Backend>(device: &B::Device) {
    if !crate::device_profile(device).autotuned {
        return;
    }
    if crate::config::current().strict {
        panic!(
            "{}",
            AutotuneHazard {
                backend: B::name(device)
            }
        );
    }
    if !ANNOUNCED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "{}",
            AutotuneHazard {
                backend: B::name(device)
            }
        );
    }
}

/// Why [`use_autotune_cache_dir`] could not pin the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinCacheError {
    /// CubeCL read its configuration already (a CubeCL device was used): it cannot change.
    AlreadyConfigured,
    /// No CubeCL backend feature (wgpu, cuda, rocm) in this build.
    NoCubeclBackend,
}

impl core::fmt::Display for PinCacheError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::AlreadyConfigured => f.write_str(
                "burn-deterministic: CubeCL's configuration is already in use; pin the autotune \
                 cache before the first CubeCL device is created",
            ),
            Self::NoCubeclBackend => f.write_str(
                "burn-deterministic: no CubeCL backend (wgpu, cuda, rocm) in this build, nothing to pin",
            ),
        }
    }
}

impl std::error::Error for PinCacheError {}

/// Makes CubeCL keep its autotune cache in `dir` (instead of the nearest `target/autotune`).
/// Runs that share a filled cache pick the same kernels; a new empty `dir` per process makes
/// every process tune afresh (what `--check-determinism` in the examples does, so that it
/// cannot pass by reading one cache). Must run before the first CubeCL device is used; keeps
/// the rest of CubeCL's configuration as its `cubecl.toml` / environment set it.
#[cfg(any(feature = "wgpu", feature = "cuda", feature = "rocm"))]
pub fn use_autotune_cache_dir(dir: impl Into<std::path::PathBuf>) -> Result<(), PinCacheError> {
    use burn_cubecl::cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
    let mut storage = CubeClRuntimeConfig::storage().lock();
    if storage.is_some() {
        return Err(PinCacheError::AlreadyConfigured);
    }
    let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
    config.autotune.cache = CacheConfig::File(dir.into());
    *storage = Some(std::sync::Arc::new(config));
    Ok(())
}

/// Without a CubeCL backend there is no autotune cache to pin.
#[cfg(not(any(feature = "wgpu", feature = "cuda", feature = "rocm")))]
pub fn use_autotune_cache_dir(_dir: impl Into<std::path::PathBuf>) -> Result<(), PinCacheError> {
    Err(PinCacheError::NoCubeclBackend)
}
