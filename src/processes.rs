//! Running a test binary's own helper test in new processes, for determinism checks that must
//! span processes (thread pools, atomics, autotune caches all start afresh in each).
//!
//! The parent runs `current_exe --exact <helper> --ignored --nocapture`; the helper reads its
//! case from [`CASE_ENV`] and prints `KEY=value` lines, which [`Child::values`] collects.

use std::path::PathBuf;
use std::process::Command;

/// The environment variable that tells a helper test which case to run.
pub const CASE_ENV: &str = "BD_CHILD_CASE";

/// A phrase only the decorator's autotune notice (`AutotuneHazard`) prints.
pub const AUTOTUNE_NOTICE: &str = "is built with CubeCL autotune";

/// What one child process printed.
#[derive(Debug, Clone)]
pub struct Child {
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// Every value printed as `KEY=value`, in order. The pair may follow other text on its
    /// line (libtest prints `test NAME ... ` before the first output) after a space.
    pub fn values(&self, key: &str) -> Vec<String> {
        let prefix = format!("{key}=");
        self.stdout
            .lines()
            .filter_map(|line| {
                line.split_whitespace()
                    .find_map(|word| word.strip_prefix(&prefix))
            })
            .map(str::to_string)
            .collect()
    }

    /// Whether the child printed the decorator's autotune notice.
    pub fn announced_autotune(&self) -> bool {
        self.stderr.contains(AUTOTUNE_NOTICE)
    }

    /// The one value printed as `KEY=value`.
    pub fn value(&self, key: &str) -> String {
        let values = self.values(key);
        assert_eq!(
            values.len(),
            1,
            "expected one {key}= line from the child:\n{}",
            self.stdout
        );
        values[0].clone()
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
    let output = spawn(helper, case, env);
    let child = Child {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    (output.status.success(), child)
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

/// A new empty directory under the system's temporary directory.
pub fn fresh_dir(label: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bd-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

fn spawn(helper: &str, case: &str, env: &[(&str, &str)]) -> std::process::Output {
    let cache = fresh_dir("autotune");
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([
            "--exact",
            helper,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE_ENV, case)
        .env(AUTOTUNE_CACHE_ENV, &cache);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("child test process starts");
    let _ = std::fs::remove_dir_all(&cache);
    output
}
