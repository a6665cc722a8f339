//! This repository's unpublished support code (`publish = false`): the PyTorch golden vectors,
//! error metrics, backend set-up (software Vulkan pinning), the negative controls and child
//! processes of the tests, and, in [`example_support`], what the training examples share.
//! Nothing here is part of the product: the examples' deterministic-training machinery comes
//! from the published `burn_deterministic::train`.

pub mod controls;
pub mod example_support;
pub mod gather;
pub mod golden;
pub mod harness;
pub mod metrics;
pub mod processes;
#[cfg(feature = "wgpu")]
pub mod wgpu_setup;
