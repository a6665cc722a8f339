//! A user's program, outside the repository's workspace: only `burn` (with `candle`) and
//! `burn-deterministic` (features `flex`, `train`: not its own `candle`), built with
//! `panic = "abort"`.
//!
//! 1. Every interpolate mode trains through `Autodiff<DeterministicBackend<Candle>>`: the
//!    decorator recognises Candle by its backend name, without its `candle` feature.
//! 2. A burn-train `Learner` trains a small upsampling model data-parallel on two flex devices
//!    with `FixedOrderDataParallel`, its loader wrapped in `ResumableLoader`, its progress
//!    printed by `PlainProgress`; the parameter hash is printed for the check.
//!
//! With `--check-determinism` the program runs itself twice more in new processes
//! (`check_determinism`) and exits 1 unless both print the same parameter hash.

mod data_parallel;
mod modes;

use std::process::ExitCode;

fn main() -> ExitCode {
    const {
        assert!(
            cfg!(panic = "abort"),
            "this check needs a build with panic = \"abort\""
        )
    };
    if let Some(code) = burn_deterministic::train::check_determinism("--check-determinism", 2) {
        return code;
    }
    if let Err(message) = modes::train_every_mode() {
        eprintln!("error: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(message) = data_parallel::train_on_two_flex_devices() {
        eprintln!("error: {message}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
