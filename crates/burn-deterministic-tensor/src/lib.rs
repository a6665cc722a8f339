//! Deterministic, trainable 2-D interpolate for **Burn 0.22 and later**.
//!
//! Burn 0.22 removed the backend type parameter (`Tensor<D>`, backends chosen at run time by
//! `Device`), so no backend decorator can plug in there; this crate is the tensor-level front
//! door of `burn-deterministic` instead. [`interpolate`] has the signature of
//! `burn::tensor::module::interpolate` and [`Interpolate2d`] is a drop-in for
//! `burn::nn::interpolate::Interpolate2d`:
//!
//! ```rust
//! use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
//! use burn::tensor::{Device, Distribution, Tensor};
//! use burn_deterministic_tensor::interpolate;
//!
//! let device = Device::flex().autodiff();
//! let x = Tensor::<4>::random([1, 3, 8, 8], Distribution::Default, &device).require_grad();
//! let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_scale_factor([4.0, 4.0]);
//! let y = interpolate(x.clone(), options);
//! assert_eq!(y.dims(), [1, 3, 32, 32]);
//! // A backward exists for every mode (Burn's CubeCL backends have none for bilinear).
//! let grads = (y.clone() * y).mean().backward();
//! assert_eq!(x.grad(&grads).expect("x requires a gradient").dims(), [1, 3, 8, 8]);
//! ```
//!
//! A 2-D resize is separable: `y[n, c] = Wh · x[n, c] · Wwᵀ`. Each axis' weights are read off
//! Burn's own forward kernel on the tensor's device (a few impulse channels through
//! `burn::tensor::module::interpolate`, decoded exactly by `burn-deterministic-core`), so they
//! are the weights Burn computes. The resize is then two matmuls with constant weights, and
//! Burn's autodiff derives the backward from them: `dx[n, c] = Whᵀ · g[n, c] · Ww`, the exact
//! adjoint, as GEMMs, with no atomics. That is a backward where Burn 0.22 has none (CubeCL
//! panics on bilinear, bicubic and lanczos3, flex on lanczos3), reproducible bit for bit.
//!
//! That is mechanism (a). [`extension`] (features `extension-flex`, `extension-wgpu`) is
//! mechanism (b): Burn's own forward kernel through a `#[backend_extension]`, with a handwritten
//! autodiff backward that applies the same adjoint, dense or banded (for large axes: `taps ×
//! size` multiply-adds instead of `size²`). The README compares them.
//!
//! Every mode and option Burn 0.22 accepts is supported (nearest, nearest-exact, bilinear,
//! bicubic, lanczos3; `align_corners` either way; `output_size` or `scale_factor`); options Burn
//! would panic on are refused by [`try_interpolate`] with a [`ResizeError`] naming the problem,
//! and so is a mode the device's backend has no forward kernel for (there are no weights to
//! read: flex 0.22.1 has no nearest-exact, wgpu has).
//!
//! Beyond the resize, Burn 0.22 gives this crate no op to intercept; [`fixed_order`] has a
//! function to call instead of each Burn op whose sums meet in a varying order on CubeCL: the
//! reductions (a `sum()` loss, gradient clipping by norm, also as an optimizer adaptor), the
//! indexing ops whose forward or backward scatter-adds (`gather`, `select`, `scatter`,
//! `select_assign`, `gather_nd`, `scatter_nd`) and `deform_conv2d`'s input gradient.
//!
//! Bit-reproducible across processes on a CubeCL device (wgpu, cuda, rocm) only with `burn`
//! built without its default `autotune` feature, or with every process reading one filled
//! autotune cache: autotune picks each matmul kernel by timing, and the candidates add in
//! different orders. With feature `autotune-check` (on with `extension-wgpu`), [`autotune`]
//! says so once on stderr at the first resize on such a device, refuses it under the
//! configuration's `strict` ([`ResizeError::Autotuned`]), lets a training fail early
//! ([`autotune::check`]) and pins the cache to a directory
//! ([`autotune::use_autotune_cache_dir`]).
//!
//! Which forward kernels a backend has is declared from Burn 0.22.1's sources (flex has no
//! nearest-exact), never probed: the crate catches no panic and works in binaries built with
//! `panic = "abort"`. `burn-deterministic-core`, the engine shared with the Burn 0.21 crate, is
//! an implementation detail depended on with an exact version.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "autotune-check")]
#[cfg_attr(docsrs, doc(cfg(feature = "autotune-check")))]
pub mod autotune;
mod error;
#[cfg(any(feature = "extension-flex", feature = "extension-wgpu"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "extension-flex", feature = "extension-wgpu")))
)]
pub mod extension;
pub mod fixed_order;
mod module;
pub mod report;
mod separable;
#[cfg(feature = "train")]
#[cfg_attr(docsrs, doc(cfg(feature = "train")))]
pub mod train;
mod weights;

/// The configuration, shared with the Burn 0.21 decorator (`burn-deterministic`): the layout of
/// the backward's maps, the weight and cache limits and `strict` (refuse an autotuned device;
/// checked with feature `autotune-check`, refused on any CubeCL device without it) apply here;
/// `policy`, `modes` and `fixed_order_ops` decide what the decorator takes over and do not
/// (these functions are called explicitly). Read the same way: a [`with_config`] scope, else
/// [`set_config`]'s, else the `BURN_DETERMINISTIC_CONFIG` environment variable, else the
/// defaults.
pub use burn_deterministic_core::config;
pub use config::{set_config, with_config, ConfigError, DeterministicConfig, WeightLayout};
pub use error::{Axis, ResizeError};
pub use fixed_order::IndexError;
pub use module::{Interpolate2d, Interpolate2dConfig};
pub use separable::{cache_stats, reset_cache, CacheStats};

use burn::tensor::ops::InterpolateOptions;
use burn::tensor::Tensor;
use burn_deterministic_core::Layout;
use report::Rewrite;

// The crate's README and the repository's Burn 0.22 page: their Rust snippets compile and run as
// doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
#[cfg(all(doctest, feature = "train"))]
#[doc = include_str!("../../../docs/burn-0.22.md")]
struct Burn022Doctests;

/// `burn::tensor::module::interpolate`, deterministic and with a backward for every mode.
///
/// # Panics
///
/// Where [`try_interpolate`] returns an error, with its message: where Burn's `interpolate`
/// panics (neither or both of `output_size` and `scale_factor` set, a size that rounds to
/// zero), and where this crate refuses (weights over the limit, no forward kernel to read the
/// weights off, an autotuned device under `strict`).
pub fn interpolate(x: Tensor<4>, options: InterpolateOptions) -> Tensor<4> {
    try_interpolate(x, options).unwrap_or_else(|error| panic!("{error}"))
}

/// [`interpolate`], with bad options returned as an error before any kernel runs.
pub fn try_interpolate(
    x: Tensor<4>,
    options: InterpolateOptions,
) -> Result<Tensor<4>, ResizeError> {
    // One read of the configuration per resize: the autotune rule and the maps' limits.
    let config = config::current();
    let device = x.device();
    autotune_rule(&device, config.strict)?;
    let maps = separable::axis_maps(&x, &options, &config)?;
    // Both passes are dense GEMMs; autodiff derives the backward from them.
    let mode = separable::resampling(&options).mode;
    let layouts = [Layout::Dense, Layout::Dense];
    report::record(&device, Rewrite::ResizeForward { mode, layouts });
    if x.is_tracked() {
        report::record(&device, Rewrite::ResizeBackward { mode, layouts });
    }
    Ok(separable::resize(x, maps))
}

/// The autotune rule, at every resize before any kernel runs: on a CubeCL device that
/// autotunes, refused under `strict`, else announced once per process on stderr.
pub(crate) fn autotune_rule(
    device: &burn::tensor::Device,
    strict: bool,
) -> Result<(), ResizeError> {
    #[cfg(feature = "autotune-check")]
    {
        autotune::on_use(device, strict).map_err(ResizeError::Autotuned)
    }
    #[cfg(not(feature = "autotune-check"))]
    {
        strict_without_autotune_check(device, strict)
    }
}

/// The autotune rule of a build without feature `autotune-check`. Whether a build autotunes is
/// read off burn-cubecl, which only that feature brings in: `strict` on a CubeCL device cannot
/// be honoured without it, so it refuses; other devices pass. (Compiled in every build, so that
/// its test runs in the test build, which has the feature.)
#[cfg_attr(feature = "autotune-check", allow(dead_code))]
fn strict_without_autotune_check(
    device: &burn::tensor::Device,
    strict: bool,
) -> Result<(), ResizeError> {
    if strict && cubecl_backend(device).is_some() {
        Err(ResizeError::NotRouted {
            device: format!("{device:?}"),
            remedy: "`strict` on a CubeCL device needs this crate's `autotune-check` feature, \
                     to verify that the device does not autotune",
        })
    } else {
        Ok(())
    }
}

/// The name Burn gives `device`'s backend when it is a CubeCL one. Burn names a CubeCL backend
/// `cubecl<runtime>`, nested in `dispatch<…>`, `autodiff<…>` and `fusion<…>`; the device's
/// variant itself is only visible to crates built with the same backend features.
pub(crate) fn cubecl_backend(device: &burn::tensor::Device) -> Option<String> {
    use burn::backend::{Backend, Dispatch};
    let backend = Dispatch::name(device.as_dispatch());
    backend.contains("cubecl<").then_some(backend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::wgpu::WgpuBackend;
    use burn::tensor::Device;

    /// Without feature `autotune-check`, `strict` refuses every CubeCL device by the name of
    /// that feature and leaves flex alone; without `strict`, every device passes. (A build
    /// without the feature applies this rule at every resize; its wiring is one call.)
    #[test]
    fn strict_without_autotune_check_refuses_cubecl_devices() {
        let vulkan = Device::wgpu_options()
            .graphics_api(WgpuBackend::Vulkan)
            .init()
            .unwrap_or_else(|e| panic!("no Vulkan adapter for wgpu: {e}"))
            .autodiff();
        let flex = Device::flex().autodiff();
        assert!(strict_without_autotune_check(&flex, true).is_ok());
        assert!(strict_without_autotune_check(&vulkan, false).is_ok());
        match strict_without_autotune_check(&vulkan, true) {
            Err(ResizeError::NotRouted { remedy, .. }) => {
                assert!(remedy.contains("autotune-check"), "{remedy}")
            }
            other => panic!("strict passed on wgpu without the check: {other:?}"),
        }
    }
}
