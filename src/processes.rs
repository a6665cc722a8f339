//! Running a test binary's own helper test in new processes, for determinism checks that must
//! span processes (thread pools, atomics, autotune caches all start afresh in each).
//!
//! The parent runs `current_exe --exact <helper> --ignored --nocapture`; the helper reads its
//! case from [`CASE_ENV`] and prints `KEY=value` lines, which `Child::values` collects.

pub use burn_deterministic_testkit::child::CASE_ENV;
pub use burn_deterministic_testkit::fresh_dir;

/// A phrase only the decorator's autotune notice (`AutotuneHazard`) prints.
pub const AUTOTUNE_NOTICE: &str = "is built with CubeCL autotune";

/// What one child process printed (`values`, `value`, `stdout`, `stderr` through `Deref`).
#[derive(Debug, Clone)]
pub struct Child(burn_deterministic_testkit::child::Child);

impl std::ops::Deref for Child {
    type Target = burn_deterministic_testkit::child::Child;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Child {
    /// Whether the child printed the decorator's autotune notice.
    pub fn announced_autotune(&self) -> bool {
        self.stderr.contains(AUTOTUNE_NOTICE)
    }
}

/// Runs the ignored test `helper` of this test binary for `case` in a new process, with `env`
/// set on top of the parent's environment, and a new empty CubeCL autotune cache directory
/// (passed as [`AUTOTUNE_CACHE_ENV`]: the helper pins it, so no two processes share tuning
/// results). Panics with the child's output when it fails.
pub fn run_child(helper: &str, case: &str, env: &[(&str, &str)]) -> Child {
    let (succeeded, child) = run_child_unchecked(helper, case, env);
    assert!(
        succeeded,
        "child {case} failed:\n{}\n{}",
        child.stdout, child.stderr
    );
    child
}

/// Like [`run_child`], for a case expected to fail: the child's output and whether it
/// succeeded.
pub fn run_child_unchecked(helper: &str, case: &str, env: &[(&str, &str)]) -> (bool, Child) {
    let cache = fresh_dir("autotune");
    let cache_env = [(AUTOTUNE_CACHE_ENV, cache.to_str().expect("a UTF-8 path"))];
    let env: Vec<(&str, &str)> = cache_env.iter().chain(env).copied().collect();
    let child = burn_deterministic_testkit::child::run(helper, case, &env);
    (child.succeeded, Child(child))
}

/// The environment variable holding a fresh autotune cache directory for one process. Programs
/// that honour it (the test helpers, the examples) call
/// `burn_deterministic::determinism::use_autotune_cache_dir` with it before any CubeCL device.
pub const AUTOTUNE_CACHE_ENV: &str = "BD_AUTOTUNE_CACHE_DIR";

/// Pins CubeCL's autotune cache to [`AUTOTUNE_CACHE_ENV`] when it is set (a no-op without a
/// CubeCL backend). Call first thing in a child process.
pub fn pin_autotune_cache_from_env() {
    if let Ok(dir) = std::env::var(AUTOTUNE_CACHE_ENV) {
        #[cfg(any(feature = "wgpu", feature = "cuda", feature = "rocm"))]
        burn_deterministic::determinism::use_autotune_cache_dir(&dir)
            .unwrap_or_else(|e| panic!("{AUTOTUNE_CACHE_ENV}={dir}: {e}"));
        #[cfg(not(any(feature = "wgpu", feature = "cuda", feature = "rocm")))]
        let _ = dir;
    }
}
