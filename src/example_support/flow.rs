//! The flow every training example's `main` shares: `--check-determinism` (train twice in two
//! new processes and compare), or save the config, train, report.

use crate::example_support::run_config::CommonArgs;
use crate::example_support::run_log::{report, RunLog, Trained};
use burn_deterministic::train::{
    CheckError, CheckReport, DeterminismCheck, CHECK_RUN_ENV, HASH_LINE,
};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs this program twice in new processes with the library's fresh-process check
/// (`burn_deterministic::train::DeterminismCheck`): the same arguments minus
/// `--check-determinism`, plus `--output-dir DIR/run-N`, each with an empty autotune cache.
/// Returns the comparison of the parameter hashes the runs print.
pub fn check_determinism(output_dir: &Path) -> Result<CheckReport, CheckError> {
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
    DeterminismCheck::new(exe, args, 2)
        .with_per_run_args(move |run| {
            let dir = output_dir.join(format!("run-{run}"));
            vec!["--output-dir".into(), dir.into_os_string()]
        })
        .run()
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
    // Before any device exists: CubeCL reads its configuration once. A run of
    // `--check-determinism` gets an empty autotune cache.
    burn_deterministic::train::enter_check_run();
    let output_dir = common
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/runs").join(example));
    if common.check_determinism {
        return match check_determinism(&output_dir) {
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
        let checkpoint = output_dir.join(format!("checkpoint/model-{epoch}.mpk"));
        if !checkpoint.is_file() {
            return fail(format!(
                "--resume {epoch}: no checkpoint {} (a run keeps its last two epochs' \
                 checkpoints; give the run's --output-dir)",
                checkpoint.display()
            ));
        }
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
        determinism: burn_deterministic::report::report().to_json(),
    };
    if std::env::var_os(CHECK_RUN_ENV).is_some() {
        // A run of `--check-determinism`: the line the parent reads.
        println!("{HASH_LINE}{}", log.parameter_sha256);
    }
    match report(&log, &output_dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("cannot write the results: {e}")),
    }
}
