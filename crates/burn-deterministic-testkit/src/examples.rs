//! Running a crate's examples from its tests, as a user runs them: each test builds the example
//! (`cargo build --example`, with the test build's profile and the features given; nothing to do
//! when `cargo test` already built it) and runs the binary cargo reports, so a stale example
//! from another build is never what is tested.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds example `name` of the package in `manifest_dir` with `cargo_args` (features, package)
/// in this test build's profile, and returns the path of the binary cargo reports.
pub fn build(manifest_dir: &str, name: &str, cargo_args: &[&str]) -> PathBuf {
    static BUILD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_build_at_a_time = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(manifest_dir)
        .args(["build", "--message-format=json", "--example", name])
        .args(cargo_args);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building example {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no executable for example {name}"))
}

/// Runs `exe` with `args` and `--output-dir out`, and echoes the lines a reader of the test log
/// wants (hashes, the check's verdict, percentages).
pub fn run(exe: &Path, args: &[&str], out: &Path) -> Output {
    let output = Command::new(exe)
        .args(args)
        .arg("--output-dir")
        .arg(out)
        .output()
        .expect("the example starts");
    eprintln!(
        "{} {args:?}: {}\n{}",
        exe.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| l.contains("SHA-256") || l.contains("determinism") || l.contains('%'))
            .collect::<Vec<_>>()
            .join("\n")
    );
    output
}

/// Panics with the whole output unless the process succeeded.
pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
