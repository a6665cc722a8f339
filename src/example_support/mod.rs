//! Example-only: the Burn 0.21 side of what the training examples (`segmentation`, `depth`)
//! share and a user's program would write its own way — devices and strategy per backend
//! (`devices`), the data loaders, checkpointing and rendering (`run_config`), the metric logger
//! that feeds the curves (`run_log`), the front door of the `main` flow (`flow`). The Burn-free
//! rest (options, settings, logs, charts, the flow itself) is `burn_deterministic_vision::run`
//! and `burn_deterministic_vision::plot`, shared with the Burn 0.22 examples. Everything a user
//! needs to train deterministically is in the published `burn_deterministic::train` instead.

pub mod devices;
pub mod flow;
pub mod run_config;
pub mod run_log;

pub use burn_deterministic_vision::plot;
