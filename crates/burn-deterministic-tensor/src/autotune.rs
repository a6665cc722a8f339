//! CubeCL autotune: detected, announced once per process, refused under `strict`, or pinned to
//! one cache (feature `autotune-check`).
//!
//! With `burn`'s default features, the CubeCL backends (wgpu, cuda, rocm) choose their matmul,
//! convolution and reduction kernels by timing candidates on first use, and remember the
//! choice per shape in a cache persisted under `target/`. The candidates add in different
//! orders, so two processes that start from different caches (a clean checkout, another
//! machine) can compute different bits — measured on llvmpipe: mechanism (b)'s banded training
//! gave two fresh-cache processes different parameters. Every GEMM of this crate's forward and
//! backward is such a matmul. Burn 0.22 has no run-time switch to turn autotune off. What can
//! be done:
//! - build Burn without its `autotune` feature (then each op has one fixed kernel): the fix;
//! - share one cache directory between runs ([`use_autotune_cache_dir`]): processes that read
//!   the same filled cache pick the same kernels;
//! - and never let it pass silently: the first resize on an autotuned device says so once on
//!   stderr, or is refused with [`ResizeError::Autotuned`](crate::ResizeError::Autotuned) under
//!   the configuration's `strict`; [`check`] fails early, before any resize.

use burn::tensor::Device;
use burn_deterministic_core::autotune::{AutotuneNotice, FrontDoor};

pub use burn_deterministic_core::autotune::{AutotuneHazard, PinCacheError};

/// Whether the CubeCL backends of this build autotune. Cargo unifies a crate's features per
/// build, so this holds for every CubeCL device of the process. Read off burn-cubecl's
/// convolution strategy, whose default is `Autotune` exactly when its `autotune` feature is
/// compiled in (the matmul's strategy follows the same feature).
// Public for the test that compares it with CubeCL's own autotune log; `check` is the API.
#[doc(hidden)]
pub fn compiled_in() -> bool {
    use burn_cubecl::kernel::conv::ConvStrategy;
    !matches!(
        ConvStrategy::default(),
        ConvStrategy::Direct | ConvStrategy::ImplicitGemm
    )
}

/// `Err` when bits on `device` (plain or autodiff: Burn names the backend it wraps) can depend
/// on the autotune cache: a CubeCL device in a build with autotune. Call it before training to
/// fail early.
pub fn check(device: &Device) -> Result<(), AutotuneHazard> {
    if !compiled_in() {
        return Ok(());
    }
    match crate::cubecl_backend(device) {
        Some(backend) => Err(AutotuneHazard::new(FrontDoor::Tensor, backend)),
        None => Ok(()),
    }
}

static NOTICE: AutotuneNotice = AutotuneNotice::new();

/// Called at every resize: on an autotuned device, `Err` under `strict`, else prints
/// [`AutotuneHazard`] once per process.
pub(crate) fn on_use(device: &Device, strict: bool) -> Result<(), AutotuneHazard> {
    if NOTICE.printed() && !strict {
        return Ok(());
    }
    match check(device) {
        Ok(()) => Ok(()),
        Err(hazard) => NOTICE.on_autotuned(strict, || hazard),
    }
}

/// Makes CubeCL keep its cache directory (autotune results, and the compiled kernels it keeps
/// beside them) in `dir` instead of the nearest `target/`. Runs that share a filled cache pick
/// the same kernels; a new empty `dir` per process makes every process tune afresh. Must run
/// before the first CubeCL device is used; keeps the rest of CubeCL's configuration as its
/// `cubecl.toml` / `burn.toml` / environment set it.
pub fn use_autotune_cache_dir(dir: impl Into<std::path::PathBuf>) -> Result<(), PinCacheError> {
    use burn_cubecl::cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
    // CubeCL 0.11 keeps the autotune results in its environment's store, whose root is
    // `environment.path`; `try_set` refuses once the configuration was read or set.
    let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
    config.environment.path = CacheConfig::Directory(dir.into());
    if CubeClRuntimeConfig::try_set(config) {
        Ok(())
    } else {
        Err(PinCacheError::AlreadyConfigured)
    }
}
