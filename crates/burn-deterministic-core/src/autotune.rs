//! CubeCL autotune, as both front doors report it: one hazard, one notice text, one
//! once-per-process rule, one `strict` rule.
//!
//! With Burn's default features the CubeCL backends (wgpu, cuda, rocm) choose their matmul,
//! convolution and reduction kernels by timing candidates on first use, and remember the
//! fastest per shape in a cache on disk (under `target/` by default). The candidates add in
//! different orders, so two processes that start from different caches can compute different
//! bits. Neither Burn 0.21 nor 0.22 has a run-time switch to turn autotune off. What a front
//! door can do is never let it pass silently: say so once per process at first use on an
//! autotuned device ([`AutotuneNotice`]), refuse to run under the configuration's `strict`, and
//! offer to pin the cache to one directory that runs share (a helper in each front door: the
//! two CubeCL versions keep the cache's location in different configuration fields).
//!
//! Whether a build autotunes, and what its device is called, are read by the front doors from
//! their Burn version; this module only holds what does not depend on it.

use core::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which front door reports: the text names its crate, its Burn version and its cache helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrontDoor {
    /// `burn-deterministic`, the backend decorator for Burn 0.21.
    Decorator,
    /// `burn-deterministic-tensor`, the tensor-level functions for Burn 0.22 and later.
    Tensor,
}

impl FrontDoor {
    /// The crate's name, the prefix of its messages.
    pub fn crate_name(self) -> &'static str {
        match self {
            Self::Decorator => "burn-deterministic",
            Self::Tensor => "burn-deterministic-tensor",
        }
    }

    /// The Burn version the front door is built on, as a Cargo requirement.
    fn burn_requirement(self) -> &'static str {
        match self {
            Self::Decorator => "=0.21.0",
            Self::Tensor => "=0.22.1",
        }
    }

    /// The path of the helper that pins the autotune cache to a directory.
    fn pin_helper(self) -> &'static str {
        match self {
            Self::Decorator => "burn_deterministic::determinism::use_autotune_cache_dir",
            Self::Tensor => "burn_deterministic_tensor::autotune::use_autotune_cache_dir",
        }
    }
}

/// Bits on `backend` can depend on CubeCL's autotune cache: the device is a CubeCL device in a
/// build with Burn's `autotune` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutotuneHazard {
    /// The name Burn gives the device's backend, e.g. `fusion<cubecl<wgpu<wgsl>>>`.
    pub backend: String,
    /// The front door that found it.
    pub front_door: FrontDoor,
}

impl AutotuneHazard {
    /// The hazard of `backend`, as `front_door` reports it.
    pub fn new(front_door: FrontDoor, backend: impl Into<String>) -> Self {
        Self {
            backend: backend.into(),
            front_door,
        }
    }
}

impl fmt::Display for AutotuneHazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let door = self.front_door;
        write!(
            f,
            "{}: {} is built with CubeCL autotune (Burn's default `autotune` feature): matmul, \
             convolution and reduction kernels are chosen by timing on first use and cached on \
             disk (under target/), and the candidates add in different orders, so results can \
             differ between processes that start with different autotune caches.\n\
             For bit-reproducible runs, build Burn without autotune:\n    \
             burn = {{ version = \"{}\", default-features = false, features = [\"std\", \
             \"autodiff\", \"wgpu\"] }}   # or \"cuda\"; add the other features you use\n\
             or share one filled cache between runs with {}(..). \
             The configuration's `\"strict\": true` turns this notice into an error.",
            door.crate_name(),
            self.backend,
            door.burn_requirement(),
            door.pin_helper(),
        )
    }
}

impl std::error::Error for AutotuneHazard {}

/// Why a front door's `use_autotune_cache_dir` could not pin the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinCacheError {
    /// CubeCL read its configuration already (a CubeCL device was used, or the application
    /// set it): it cannot change for the rest of the process.
    AlreadyConfigured,
    /// No CubeCL backend (wgpu, cuda, rocm) in this build: there is no cache to pin.
    NoCubeclBackend,
}

impl fmt::Display for PinCacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AlreadyConfigured => {
                "burn-deterministic: CubeCL's configuration is already in use; pin the autotune \
                 cache before the first CubeCL device is created"
            }
            Self::NoCubeclBackend => {
                "burn-deterministic: no CubeCL backend (wgpu, cuda, rocm) in this build, nothing \
                 to pin"
            }
        })
    }
}

impl std::error::Error for PinCacheError {}

/// What a front door does at first use of an autotuned device, once per process: under
/// `strict` the hazard is an error (every time), otherwise it is printed on stderr the first
/// time and passes.
#[derive(Debug)]
pub struct AutotuneNotice {
    printed: AtomicBool,
}

impl AutotuneNotice {
    /// A notice not printed yet (one `static` per front door).
    pub const fn new() -> Self {
        Self {
            printed: AtomicBool::new(false),
        }
    }

    /// `Err(hazard)` under `strict`; otherwise `Ok`, after printing `hazard` if this notice
    /// has not been printed in this process. `hazard` is only built when needed.
    pub fn on_autotuned(
        &self,
        strict: bool,
        hazard: impl FnOnce() -> AutotuneHazard,
    ) -> Result<(), AutotuneHazard> {
        if strict {
            return Err(hazard());
        }
        if !self.printed.load(Ordering::Relaxed) && !self.printed.swap(true, Ordering::Relaxed) {
            eprintln!("{}", hazard());
        }
        Ok(())
    }

    /// Whether this notice was printed in this process.
    pub fn printed(&self) -> bool {
        self.printed.load(Ordering::Relaxed)
    }
}

impl Default for AutotuneNotice {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_each_front_doors_crate_burn_and_helper() {
        let decorator = AutotuneHazard::new(FrontDoor::Decorator, "fusion<cubecl<wgpu>>");
        let text = decorator.to_string();
        assert!(text
            .starts_with("burn-deterministic: fusion<cubecl<wgpu>> is built with CubeCL autotune"));
        assert!(text.contains("\"=0.21.0\""), "{text}");
        assert!(text.contains("burn_deterministic::determinism::use_autotune_cache_dir"));
        let tensor = AutotuneHazard::new(FrontDoor::Tensor, "cubecl<wgpu>").to_string();
        assert!(tensor.starts_with("burn-deterministic-tensor: cubecl<wgpu> is built"));
        assert!(tensor.contains("\"=0.22.1\""), "{tensor}");
        assert!(tensor.contains("burn_deterministic_tensor::autotune::use_autotune_cache_dir"));
        // Everything after the names is one text.
        let tail = |t: &str| {
            t.split_once(" is built")
                .map(|(_, tail)| tail.replace("0.21.0", "V").replace("0.22.1", "V"))
        };
        assert_eq!(
            tail(&text).map(|t| t.replace("burn_deterministic::determinism", "H")),
            tail(&tensor).map(|t| t.replace("burn_deterministic_tensor::autotune", "H"))
        );
    }

    #[test]
    fn strict_refuses_every_time_and_prints_nothing() {
        let notice = AutotuneNotice::new();
        let hazard = || AutotuneHazard::new(FrontDoor::Tensor, "cubecl<wgpu>");
        assert_eq!(notice.on_autotuned(true, hazard), Err(hazard()));
        assert_eq!(notice.on_autotuned(true, hazard), Err(hazard()));
        assert!(!notice.printed());
        assert_eq!(notice.on_autotuned(false, hazard), Ok(()));
        assert!(notice.printed());
        // Printed once: later calls do not build the hazard at all.
        assert_eq!(
            notice.on_autotuned(false, || unreachable!("printed already")),
            Ok(())
        );
    }
}
