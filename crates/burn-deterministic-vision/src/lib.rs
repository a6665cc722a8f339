//! Example models, synthetic datasets and metrics for semantic segmentation and depth
//! estimation. Plain Burn code, generic over `B: Backend`, with nothing specific to
//! burn-deterministic: the same models run on a plain backend and on the decorated one.

pub mod data;
pub mod folder;
pub mod metrics;
pub mod models;
pub mod rng;
pub mod train;
