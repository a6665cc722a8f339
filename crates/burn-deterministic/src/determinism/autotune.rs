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
use burn_deterministic_core::autotune::{AutotuneNotice, FrontDoor};

pub use burn_deterministic_core::autotune::{AutotuneHazard, PinCacheError};

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

/// `Err` when bits on `device` can depend on the autotune cache. Call it before training to
/// fail early instead of at the first tensor (what `strict` does).
pub fn check<B: Backend>(device: &B::Device) -> Result<(), AutotuneHazard> {
    if crate::device::backend_profile::<B>(device).autotuned {
        Err(hazard::<B>(device))
    } else {
        Ok(())
    }
}

fn hazard<B: Backend>(device: &B::Device) -> AutotuneHazard {
    AutotuneHazard::new(FrontDoor::Decorator, B::name(device))
}

static NOTICE: AutotuneNotice = AutotuneNotice::new();

/// Called by the decorator when it creates a tensor or resizes on `device`: on an autotuned
/// device, prints [`AutotuneHazard`] once per process, or panics with it under `strict` (a
/// backend op cannot return an error; [`check`] is the way to fail without a panic).
pub(crate) fn on_use<B: Backend>(device: &B::Device) {
    if !crate::device::backend_profile::<B>(device).autotuned {
        return;
    }
    if let Err(hazard) =
        NOTICE.on_autotuned(crate::config::current().strict, || hazard::<B>(device))
    {
        panic!("{hazard}");
    }
}

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
