//! The flow every training example's `main` shares: `--check-determinism` (train twice in two
//! new processes and compare), or save the config, train, report.

use crate::run_config::CommonArgs;
use crate::run_log::{report, RunLog, Trained};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Runs this program twice as child processes with the same arguments (minus
/// `--check-determinism`, plus `--output-dir DIR/run-N`), reads both `log.json`s and compares
/// the parameter hashes. Returns whether they are equal. Each child gets a new empty CubeCL
/// autotune cache (`DIR/run-N/autotune`), so in a build with autotune the two runs tune
/// independently and cannot agree by reading one cache.
pub fn check_determinism(output_dir: &Path) -> std::io::Result<bool> {
    let exe = std::env::current_exe()?;
    let mut args: Vec<String> = Vec::new();
    let mut skip_next = false;
    for arg in std::env::args().skip(1) {
        if skip_next {
            skip_next = false;
        } else if arg == "--check-determinism" {
        } else if arg == "--output-dir" {
            skip_next = true;
        } else if !arg.starts_with("--output-dir=") {
            args.push(arg);
        }
    }
    let mut hashes = Vec::new();
    for run in 1..=2 {
        let dir = output_dir.join(format!("run-{run}"));
        eprintln!(
            "determinism check: run {run} of 2 in a new process ({})",
            dir.display()
        );
        let autotune_cache = dir.join("autotune");
        if autotune_cache.exists() {
            std::fs::remove_dir_all(&autotune_cache)?;
        }
        let status = Command::new(&exe)
            .args(&args)
            .arg("--output-dir")
            .arg(&dir)
            .env(crate::processes::AUTOTUNE_CACHE_ENV, &autotune_cache)
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other(format!("run {run} failed: {status}")));
        }
        hashes.push(RunLog::read_json(&dir)?.parameter_sha256);
    }
    println!("run 1 parameters SHA-256: {}", hashes[0]);
    println!("run 2 parameters SHA-256: {}", hashes[1]);
    Ok(hashes[0] == hashes[1])
}

/// What every training example's `main` does after parsing its options:
/// `--check-determinism` (two child processes), or create the output folder, save the Burn
/// `config` there as `config.json`, `train` (given that folder), and report: print the final
/// metrics, write `log.json` and `curves.png`. Errors end the process with status 2, a failed
/// determinism check with status 1.
pub fn run_example<C: burn::config::Config>(
    common: &CommonArgs,
    example: &str,
    config: &C,
    train: impl FnOnce(&Path) -> Result<Trained, String>,
) -> ExitCode {
    let fail = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    };
    // Before any device exists: CubeCL reads its configuration once.
    crate::processes::pin_autotune_cache_from_env();
    let output_dir = common
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/runs").join(example));
    if common.check_determinism {
        return match check_determinism(&output_dir) {
            Ok(true) => {
                println!("determinism check passed: identical parameters");
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("determinism check FAILED: the parameter hashes differ");
                ExitCode::from(1)
            }
            Err(e) => fail(e.to_string()),
        };
    }
    if let Err(e) = std::fs::create_dir_all(&output_dir) {
        return fail(format!("cannot create {}: {e}", output_dir.display()));
    }
    if let Err(e) = config.save(output_dir.join("config.json")) {
        return fail(format!("cannot write config.json: {e}"));
    }
    let trained = match train(&output_dir) {
        Ok(trained) => trained,
        Err(message) => return fail(message),
    };
    let log = RunLog {
        example: example.to_string(),
        backend: common.backend,
        devices: trained.devices,
        config: serde_json::to_value(config).expect("a Burn config is serialisable"),
        epochs: trained.epochs,
        final_metrics: trained.final_metrics,
        training_seconds: trained.training_seconds,
        parameter_sha256: trained.parameter_sha256,
    };
    match report(&log, &output_dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("cannot write the results: {e}")),
    }
}
