//! Shared support for the workspace's examples, integration tests and benchmarks: the PyTorch
//! golden vectors, error metrics, parameter hashing and backend set-up (software Vulkan pinning).

pub mod data_parallel;
pub mod experiment;
pub mod gather;
pub mod golden;
pub mod harness;
pub mod metrics;
pub mod plot;
pub mod processes;
#[cfg(feature = "wgpu")]
pub mod wgpu_setup;
