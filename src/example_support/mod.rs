//! Example-only: what the training examples (`segmentation`, `depth`) share and a user's
//! program would write its own way — their command-line options and run settings
//! (`run_config`), devices and strategy per backend (`devices`), the `main` flow with
//! `--check-determinism` (`flow`), the log and curves they write (`run_log`, `plot`).
//! Everything a user needs to train deterministically is in the published
//! `burn_deterministic::train` instead.

pub mod devices;
pub mod flow;
pub mod plot;
pub mod run_config;
pub mod run_log;
