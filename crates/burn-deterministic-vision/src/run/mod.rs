//! What the training examples of both Burns share and is not Burn code: their command-line
//! options and run settings ([`config`]), the curves, log and report a run writes ([`log`]),
//! and the `main` flow with `--check-determinism` ([`flow`]). Each Burn's glue (the loaders,
//! the checkpointing, the metric logger) adapts them to its burn-train.

pub mod config;
pub mod flow;
pub mod log;
