//! The flow every training example's `main` shares, on either Burn: `--check-determinism` (train
//! twice in two new processes and compare), or save the config, train, report.

use crate::run::config::CommonArgs;
use crate::run::log::{report, RunLog, Trained};
use burn_deterministic_core::check::{
    CheckError, CheckReport, DeterminismCheck, CHECK_RUN_ENV, HASH_LINE,
};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What differs between the two Burns' front doors in the flow.
#[derive(Debug, Clone, Copy)]
pub struct FrontDoor {
    /// The Burn version of the build, for the log (`0.21`, `0.22`).
    pub burn: &'static str,
    /// Called first in every process, before any device exists (CubeCL reads its configuration
    /// once): the front door's preparation of a run the check started.
    pub enter_check_run: fn(),
    /// Environment of the check's runs (each tunes CubeCL's autotune afresh).
    pub check_env: &'static [(&'static str, &'static str)],
    /// The run's determinism report, as text and as JSON.
    pub report: fn() -> (String, serde_json::Value),
    /// The file extension of burn-train's checkpoints (`checkpoint/model-EPOCH.EXT`).
    pub checkpoint_extension: &'static str,
}

/// Runs this program twice in new processes with the fresh-process check of
/// `burn_deterministic_core::check`: the same arguments minus `--check-determinism`, plus
/// `--output-dir DIR/run-N`, with the front door's environment. Returns the comparison of the
/// parameter hashes the runs print (and, where they differ, the first step and parameter).
pub fn check_determinism(output_dir: &Path, door: &FrontDoor) -> Result<CheckReport, CheckError> {
    let mut args: Vec<OsString> = Vec::new();
    let mut skip_next = false;
    for arg in std::env::args_os().skip(1) {
        if skip_next {
            skip_next = false;
        } else if arg == "--check-determinism" {
        } else if arg == "--output-dir" {
            skip_next = true;
        } else if !arg.to_string_lossy().starts_with("--output-dir=") {
            args.push(arg);
        }
    }
    let exe = std::env::current_exe().map_err(|error| CheckError::Start { run: 1, error })?;
    let output_dir = output_dir.to_path_buf();
    let mut check = DeterminismCheck::new(exe, args, 2).with_per_run_args(move |run| {
        let dir = output_dir.join(format!("run-{run}"));
        vec!["--output-dir".into(), dir.into_os_string()]
    });
    for (key, value) in door.check_env {
        check = check.with_env(key, value);
    }
    check.run()
}

/// What every training example's `main` does after parsing its options:
/// `--check-determinism` (two child processes), or create the output folder, save the Burn
/// `config` there as `config.json`, `train` (given that folder), and report: print the final
/// metrics and the determinism report, write `log.json` and `curves.png`. Errors end the process
/// with status 2, a failed determinism check with status 1.
pub fn run_example<C: Serialize>(
    door: &FrontDoor,
    common: &CommonArgs,
    example: &str,
    config: &C,
    train: impl FnOnce(&Path) -> Result<Trained, String>,
) -> ExitCode {
    let fail = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    };
    (door.enter_check_run)();
    let output_dir = common
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/runs").join(example));
    if common.check_determinism {
        return match check_determinism(&output_dir, door) {
            Ok(report) => {
                println!("{report}");
                report.exit_code()
            }
            Err(e) => fail(e.to_string()),
        };
    }
    if let Err(e) = std::fs::create_dir_all(&output_dir) {
        return fail(format!("cannot create {}: {e}", output_dir.display()));
    }
    if let Some(epoch) = common.resume {
        let checkpoint = output_dir.join(format!(
            "checkpoint/model-{epoch}.{}",
            door.checkpoint_extension
        ));
        if !checkpoint.is_file() {
            return fail(format!(
                "--resume {epoch}: no checkpoint {} (a run keeps its last two epochs' \
                 checkpoints; give the run's --output-dir)",
                checkpoint.display()
            ));
        }
    }
    let config = match serde_json::to_value(config) {
        Ok(config) => config,
        Err(e) => return fail(format!("cannot serialise the config: {e}")),
    };
    let text = serde_json::to_string_pretty(&config).expect("a JSON value prints");
    if let Err(e) = std::fs::write(output_dir.join("config.json"), text) {
        return fail(format!("cannot write config.json: {e}"));
    }
    let trained = match train(&output_dir) {
        Ok(trained) => trained,
        Err(message) => return fail(message),
    };
    let (report_text, report_json) = (door.report)();
    let log = RunLog {
        example: example.to_string(),
        backend: common.backend,
        burn: door.burn.to_string(),
        devices: trained.devices,
        config,
        epochs: trained.epochs,
        final_metrics: trained.final_metrics,
        training_seconds: trained.training_seconds,
        parameter_sha256: trained.parameter_sha256,
        determinism: report_json,
    };
    if std::env::var_os(CHECK_RUN_ENV).is_some() {
        // A run of `--check-determinism`: the line the parent reads.
        println!("{HASH_LINE}{}", log.parameter_sha256);
    }
    match report(&log, &report_text, &output_dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("cannot write the results: {e}")),
    }
}
