//! CubeCL autotune: detected, and announced once per process (feature `autotune-check`).
//!
//! With `burn`'s default features, the CubeCL backends (wgpu, cuda, rocm) choose their matmul,
//! convolution and reduction kernels by timing candidates on first use, and remember the
//! choice per shape in a cache persisted under `target/`. The candidates add in different
//! orders, so two processes that start from different caches (a clean checkout, another
//! machine, `CUBECL_AUTOTUNE_CACHE=0`) can compute different bits — measured on llvmpipe:
//! mechanism (b)'s banded training gave two fresh-cache processes different parameters. Every
//! GEMM of this crate's forward and backward is such a matmul. Burn 0.22 has no run-time switch
//! to turn autotune off, so the fix is at build time (`burn` without its `autotune` feature);
//! processes that share one filled cache also agree. This module only makes sure it does not
//! pass silently: [`check`] to fail early, and a notice on stderr at the first resize on an
//! autotuned device.

use burn::backend::{Backend, Dispatch};
use burn::tensor::Device;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Bits on `backend` can depend on CubeCL's autotune cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutotuneHazard {
    /// The name Burn gives the device's backend, e.g. `dispatch<autodiff<fusion<cubecl<wgpu<wgsl>>>>>`
    /// (measured with Burn's default features).
    pub backend: String,
}

impl core::fmt::Display for AutotuneHazard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "burn-deterministic-tensor: {} is built with CubeCL autotune (Burn's default \
             `autotune` feature): matmul, convolution and reduction kernels are chosen by timing \
             on first use and cached under target/, and the candidates add in different orders, \
             so results can differ between processes that start with different autotune \
             caches.\nFor bit-reproducible runs, build Burn without autotune:\n    \
             burn = {{ version = \"=0.22.1\", default-features = false, features = [\"std\", \
             \"wgpu\", \"autodiff\"] }}   # or \"cuda\"; add the other features you use\n\
             or let every run read the same filled cache (CubeCL's default, under target/).",
            self.backend
        )
    }
}

impl std::error::Error for AutotuneHazard {}

/// `Err` when bits on `device` (plain or autodiff: Burn names the backend it wraps) can depend
/// on the autotune cache: a CubeCL device in a build with autotune. Call it before training to
/// fail early.
pub fn check(device: &Device) -> Result<(), AutotuneHazard> {
    if !compiled_in() {
        return Ok(());
    }
    let backend = Dispatch::name(device.as_dispatch());
    // Burn names a CubeCL backend `cubecl<runtime>`, nested in `dispatch<…>`, `autodiff<…>` and
    // `fusion<…>`; the device's variant itself is only visible to crates built with the same backend features.
    if backend.contains("cubecl<") {
        Err(AutotuneHazard { backend })
    } else {
        Ok(())
    }
}

static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Called at every resize: on an autotuned device, prints [`AutotuneHazard`] once per process.
pub(crate) fn announce_once(device: &Device) {
    if ANNOUNCED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(hazard) = check(device) {
        if !ANNOUNCED.swap(true, Ordering::Relaxed) {
            eprintln!("{hazard}");
        }
    }
}
