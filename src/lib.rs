//! Shared support for the workspace's examples, integration tests and benchmarks: the PyTorch
//! golden vectors, error metrics, parameter hashing and backend set-up (software Vulkan pinning);
//! for the training examples, their run settings (`run_config`), devices (`devices`), report
//! (`run_log`, `plot`) and `main` flow (`flow`).

pub mod controls;
pub mod devices;
pub mod flow;
pub mod gather;
pub mod golden;
pub mod harness;
pub mod metrics;
pub mod plot;
pub mod processes;
pub mod run_config;
pub mod run_log;
#[cfg(feature = "wgpu")]
pub mod wgpu_setup;
