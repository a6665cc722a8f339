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
            .filter(|l| {
                l.contains("SHA-256")
                    || l.contains("determinism")
                    || l.contains("first difference")
                    || l.contains('%')
            })
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

/// The examples' negative control of their own check: the segmentation example's
/// `--check-determinism` of one epoch on three flex devices with burn-train's own strategy
/// (gradients summed in the order the workers finish). The data sizes are the caller's.
pub const BURN_TRAIN_STRATEGY_CHECK: [&str; 9] = [
    "--backend",
    "flex",
    "--devices",
    "3",
    "--data-parallel",
    "burn-train",
    "--epochs",
    "1",
    "--check-determinism",
];

/// The modules of the example segmentation net that hold parameters: every parameter's path
/// starts with one of them.
pub const SEGMENTATION_MODULES: [&str; 6] =
    ["stem", "down2", "down3", "fuse", "main_head", "aux_head"];

/// Where a failed `--check-determinism` says its runs first differ: its
/// `first difference: step N, gradient of `PATH` (K of M parameters differ at that step)` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstDifference {
    pub step: u64,
    /// `gradient` or `value`.
    pub traced: String,
    pub parameter: String,
    pub differing: usize,
    pub parameters: usize,
}

impl FirstDifference {
    /// Reads the line out of a check's standard output; `None` if it has no such line or the
    /// line does not have that form.
    pub fn find(stdout: &str) -> Option<Self> {
        let line = stdout
            .lines()
            .find_map(|line| line.strip_prefix("first difference: step "))?;
        let (step, rest) = line.split_once(", ")?;
        let (traced, rest) = rest.split_once(" of `")?;
        let (parameter, rest) = rest.split_once("` (")?;
        let (differing, rest) = rest.split_once(" of ")?;
        let (parameters, _) = rest.split_once(' ')?;
        Some(Self {
            step: step.parse().ok()?,
            traced: traced.to_string(),
            parameter: parameter.to_string(),
            differing: differing.parse().ok()?,
            parameters: parameters.parse().ok()?,
        })
    }
}

/// A negative control of an example's `--check-determinism`: runs `check` (the example's check
/// of a configuration whose bits drift from process to process, its argument the try from 1) up
/// to `tries` times until its runs differ, then asserts what the user sees: exit status 1, the
/// `FAILED` verdict, and a `first difference:` line naming a step from 1 and a parameter, with
/// at least one and at most all parameters differing. Panics if every try agreed: the control
/// could not fail.
pub fn assert_check_fails_and_says_where(
    tries: usize,
    mut check: impl FnMut(usize) -> Output,
) -> FirstDifference {
    for attempt in 1..=tries {
        let output = check(attempt);
        if output.status.code() == Some(0) {
            continue;
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let context = format!(
            "status {}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.code(), Some(1), "{context}");
        assert!(stdout.contains("determinism check FAILED"), "{context}");
        let difference = FirstDifference::find(&stdout)
            .unwrap_or_else(|| panic!("no `first difference: step` line:\n{context}"));
        assert!(difference.step >= 1, "{context}");
        assert!(!difference.parameter.is_empty(), "{context}");
        assert!(
            (1..=difference.parameters).contains(&difference.differing),
            "{context}"
        );
        return difference;
    }
    panic!("{tries} checks of a drifting configuration all passed: the control cannot fail")
}

#[cfg(test)]
mod tests {
    use super::FirstDifference;

    #[test]
    fn reads_the_first_difference_line() {
        let stdout = "run 1 parameters SHA-256: ab\nrun 2 parameters SHA-256: cd\n\
            first difference: step 3, gradient of `decoder.up2.conv.weight` (4 of 17 parameters \
            differ at that step)\ndeterminism check FAILED: the parameter hashes differ";
        assert_eq!(
            FirstDifference::find(stdout),
            Some(FirstDifference {
                step: 3,
                traced: "gradient".into(),
                parameter: "decoder.up2.conv.weight".into(),
                differing: 4,
                parameters: 17,
            })
        );
        assert_eq!(
            FirstDifference::find("first difference: not located (…)"),
            None
        );
        assert_eq!(FirstDifference::find("determinism check passed"), None);
    }
}
