//! # burn-deterministic
//!
//! [`DeterministicBackend<B>`] wraps any Burn backend `B`, forwards every operation to `B`
//! unchanged, and takes over only 2-D `interpolate` and its backward.
//!
//! A 2-D resize is separable: per axis it is a linear map, so `y = Wh · x · Wwᵀ` with
//! `Wh: [out_h, in_h]` and `Ww: [out_w, in_w]`. The decorator reads those matrices off `B`'s own
//! forward kernel (by resizing impulses), computes the forward as two matmuls of `B` on
//! accelerator devices, and the backward as the exact adjoint `dx = Whᵀ · g · Ww` everywhere.
//! Matmuls use no atomics, so the gradient is bit-for-bit reproducible, and it exists for
//! bilinear, bicubic and lanczos3, whose native backward panics on most Burn 0.21 backends.
//!
//! ```rust
//! # #[cfg(feature = "wgpu")]
//! type Train = burn::backend::Autodiff<burn_deterministic::DeterministicBackend<burn::backend::Wgpu>>;
//! ```
//!
//! The backward of a bilinear upsample, which plain `NdArray` refuses ("backward is not
//! supported"), through the decorator:
//!
//! ```rust
//! # #[cfg(feature = "ndarray")] {
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::module::interpolate;
//! use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
//! use burn::tensor::{Distribution, Tensor};
//!
//! type Train = Autodiff<burn_deterministic::DeterministicBackend<NdArray>>;
//!
//! let device = Default::default();
//! let x = Tensor::<Train, 4>::random([1, 3, 8, 8], Distribution::Default, &device).require_grad();
//! let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
//! let y = interpolate(x.clone(), [16, 16], options);
//! let grads = (y.clone() * y).sum().backward();
//! let dx = x.grad(&grads).expect("x requires a gradient");
//! assert_eq!(dx.dims(), [1, 3, 8, 8]);
//! # }
//! ```
//!
//! Beyond resize, the decorator keeps the rest of a training step in a fixed order: full sums
//! and `scatter_nd` are rewritten on the devices where `B`'s kernel adds in a varying order, and
//! a build whose CubeCL kernels are picked by autotune is announced (see [`determinism`]).
//!
//! What is rewritten, and when, is set by [`DeterministicConfig`] (see [`config`]); what was
//! rewritten in a run, per device, and the hazards seen, is in [`report`]. Feature `train` adds
//! the module `train`: data-parallel training with a fixed gradient order, a parameter hash, a
//! fresh-process determinism check for a user's own program, resuming with the uninterrupted
//! run's data order, and a plain-text progress renderer. Which
//! `interpolate` kernels a backend has is declared per device type ([`InterpolateKernels`] in
//! its [`DeviceProfile`]), never probed: the library does not catch panics, and works in
//! binaries built with `panic = "abort"`.
//!
//! `burn-deterministic-core`, the Burn-independent engine, is an implementation detail: it is
//! depended on with an exact version, and its API may change in any release.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
pub mod determinism;
mod device;
#[cfg(feature = "distributed")]
mod distributed;
mod ops;
pub mod report;
pub mod resize;
#[cfg(feature = "train")]
#[cfg_attr(docsrs, doc(cfg(feature = "train")))]
pub mod train;

pub use backend::DeterministicBackend;
/// Run-time configuration: what the decorator rewrites, and when (the engine's, shared with
/// the Burn 0.22 front door).
pub use burn_deterministic_core::config;
/// Why a resize cannot be served: the engine's one error, shared with the Burn 0.22 front door.
/// Burn's backend ops cannot return errors, so the decorator panics with its message at its
/// entry, before any kernel runs; [`resize::check_resize`] returns it as a value.
pub use burn_deterministic_core::{Axis, ResizeError};
pub use burn_deterministic_core::{Layout, Mode};
pub use config::{
    set_config, with_config, ConfigError, DeterministicConfig, ModeSet, RewritePolicy, WeightLayout,
};
pub use device::{
    device_profile, mark_device, profile_by_backend_name, DeviceKind, DeviceProfile, FullSumOrder,
    InterpolateKernels, OrderHazards,
};

// The crate's README and the repository's documentation pages: their Rust snippets compile and
// run as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/configuration.md")]
struct ConfigurationDoctests;
