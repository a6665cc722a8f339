//! The resize engine behind `interpolate` and `interpolate_backward`, and the policy that
//! decides when it runs (this file).
//!
//! - `math.rs`: the math — weights → per-axis map → separable product → adjoint;
//! - `weights.rs`: the weights, read off the inner backend's own kernel;
//! - `apply.rs`: the maps on the device and the passes that multiply by them;
//! - `check.rs`: the checks that run before any kernel;
//! - `cache.rs`: the maps kept per geometry.
//!
//! What does not depend on Burn's types is in `burn-deterministic-core`, shared with the Burn
//! 0.22 front door: the tap windows, the weight decoding, the band geometry, the cost model (the
//! one count of bytes and multiply-adds) and the cache.

mod apply;
mod cache;
mod check;
mod math;
mod weights;

pub use cache::{cache_stats, reset_cache, CacheStats};
pub use check::check_resize;

use crate::config::{self, DeterministicConfig, RewritePolicy};
use crate::report::Rewrite;
use crate::{DeviceKind, ResizeError};
use burn_backend::ops::{InterpolateMode, InterpolateOptions};
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, TensorMetadata};
use burn_deterministic_core::{Mode, Resampling};
use check::{check_input, checked};
use math::ResizePlan;

/// `interpolate` through the decorator: `B::interpolate` unless the configuration rewrites the
/// forward (see [`RewritePolicy`]), in which case `Wh · x · Wwᵀ`.
///
/// A native forward (`auto` on a CPU device) is `B`'s call after a check of the sizes alone: no
/// weight work and no weight limit, so it fails only where `B` fails (with a message naming the
/// problem); the weights are built, and checked, by the backward that needs them.
///
/// # Panics
/// With the [`ResizeError`] message when a rewritten resize cannot be served (see
/// [`check_resize`]).
pub(crate) fn interpolate<B: Backend>(
    x: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B> {
    let config = config::current();
    let device = B::float_device(&x);
    if !takes_over::<B>(&config, &options, &device) {
        return B::interpolate(x, output_size, options);
    }
    owned::record::<B>(&x, &device, output_size, &options);
    if !rewrites_forward::<B>(config.policy, &device) {
        if let Err(e) = check_input::<B>(&x, output_size) {
            panic!("{e}");
        }
        return B::interpolate(x, output_size, options);
    }
    let checked = checked::<B>(&x, output_size, &options, &config);
    let plan = ResizePlan::<B>::new(&checked, output_size, &options, x.dtype(), &device, &config);
    let mode = resampling(&options).mode;
    let layouts = checked.layouts;
    crate::report::record::<B>(&device, Rewrite::ResizeForward { mode, layouts }, true);
    plan.forward(x)
}

/// `interpolate_backward` through the decorator: the adjoint `Whᵀ · grad · Ww` of the same
/// weights the forward uses, on every device (the native backward of bilinear, bicubic and
/// lanczos3 panics on most Burn 0.21 backends).
///
/// The weights are read off `B`'s forward kernel for `x`'s shape, dtype and the options, so the
/// adjoint is the exact gradient of the forward that ran, native or rewritten. It is taken
/// whenever the configuration takes the mode over now, or took it over at a forward of this
/// resize on this thread: a configuration changed between forward and backward (a
/// [`crate::with_config`] scope closed before `backward()`) never sends the backward to `B`'s
/// kernel. A gradient in another dtype than `x` is cast to `x`'s, as the weights are.
///
/// # Panics
/// With the [`ResizeError`] message when the input cannot be resized or `grad` does not have
/// the output's shape.
pub(crate) fn interpolate_backward<B: Backend>(
    x: FloatTensor<B>,
    grad: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B> {
    let config = config::current();
    let device = B::float_device(&x);
    if !takes_over::<B>(&config, &options, &device)
        && !owned::contains::<B>(&x, &device, output_size, &options)
    {
        return B::interpolate_backward(x, grad, output_size, options);
    }
    let checked = checked::<B>(&x, output_size, &options, &config);
    let [n, c, _, _] = checked.dims;
    let expected = vec![n, c, output_size[0], output_size[1]];
    if grad.shape().as_slice() != expected.as_slice() {
        let found = grad.shape().to_vec();
        panic!("{}", ResizeError::GradientShape { expected, found });
    }
    let dtype = x.dtype();
    let grad = if grad.dtype() == dtype {
        grad
    } else {
        B::float_cast(grad, dtype.into())
    };
    let plan = ResizePlan::<B>::new(&checked, output_size, &options, dtype, &device, &config);
    let mode = resampling(&options).mode;
    let layouts = checked.layouts;
    crate::report::record::<B>(&device, Rewrite::ResizeBackward { mode, layouts }, true);
    plan.adjoint(grad)
}

/// What the weights depend on besides the sizes, in the engine's Burn-independent terms.
fn resampling(options: &InterpolateOptions) -> Resampling {
    let mode = match options.mode {
        InterpolateMode::Nearest => Mode::Nearest,
        InterpolateMode::Bilinear => Mode::Bilinear,
        InterpolateMode::Bicubic => Mode::Bicubic,
        InterpolateMode::Lanczos3 => Mode::Lanczos3,
    };
    Resampling {
        mode,
        align_corners: options.align_corners,
    }
}

/// Whether this resize is the decorator's (forward policy aside): the configuration takes its
/// mode over, or `B` has no backward kernel for it on this device (its declared
/// [`crate::InterpolateKernels`]), so that every mode trains. `never` leaves everything to `B`.
fn takes_over<B: Backend>(
    config: &DeterministicConfig,
    options: &InterpolateOptions,
    device: &B::Device,
) -> bool {
    config.policy != RewritePolicy::Never
        && (config.modes.contains(resampling(options).mode)
            || !crate::device::backend_profile::<B>(device)
                .interpolate_kernels
                .has_backward(&options.mode))
}

/// Resizes whose forward the decorator took over on this thread, remembered so that their
/// backward is the decorator's adjoint even when the configuration in effect at `backward()`
/// would hand it to `B` (whose backward panics for bilinear, bicubic and lanczos3 on most
/// backends).
///
/// Per thread, like configuration scopes: autodiff runs a graph's backward on the thread that
/// calls `backward()`, normally the one that ran its forward. Keyed by backend type, device,
/// input shape, dtype, output size and options (what the weights depend on), and bounded: past
/// `CAPACITY` distinct resizes the set starts over, and a forgotten resize gets the routing of
/// the configuration current at its backward.
mod owned {
    use burn_backend::ops::InterpolateOptions;
    use burn_backend::tensor::FloatTensor;
    use burn_backend::{Backend, TensorMetadata};
    use std::cell::RefCell;
    use std::collections::HashSet;

    /// How many distinct resizes one thread remembers.
    const CAPACITY: usize = 4096;

    thread_local! {
        static OWNED: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    }

    fn key<B: Backend>(
        x: &FloatTensor<B>,
        device: &B::Device,
        output_size: [usize; 2],
        options: &InterpolateOptions,
    ) -> String {
        format!(
            "{}|{device:?}|{:?}|{:?}|{output_size:?}|{options:?}",
            core::any::type_name::<B>(),
            x.shape().as_slice(),
            x.dtype()
        )
    }

    pub(super) fn record<B: Backend>(
        x: &FloatTensor<B>,
        device: &B::Device,
        output_size: [usize; 2],
        options: &InterpolateOptions,
    ) {
        let key = key::<B>(x, device, output_size, options);
        OWNED.with(|owned| {
            let mut owned = owned.borrow_mut();
            if owned.len() >= CAPACITY && !owned.contains(&key) {
                owned.clear();
            }
            owned.insert(key);
        });
    }

    pub(super) fn contains<B: Backend>(
        x: &FloatTensor<B>,
        device: &B::Device,
        output_size: [usize; 2],
        options: &InterpolateOptions,
    ) -> bool {
        let key = key::<B>(x, device, output_size, options);
        OWNED.with(|owned| owned.borrow().contains(&key))
    }
}

/// Whether the forward is computed with matmuls under `policy` on `device`.
///
/// `Auto` keeps the native forward on CPU devices, except when the inner backend records
/// gradients (`DeterministicBackend<Autodiff<_>>`): the decorator cannot hand autodiff a
/// backward, so there the forward must be built from ops autodiff can differentiate.
pub(crate) fn rewrites_forward<B: Backend>(policy: RewritePolicy, device: &B::Device) -> bool {
    let accelerator = crate::device::backend_profile::<B>(device).kind == DeviceKind::Accelerator;
    policy.rewrites_forward(accelerator, B::ad_enabled(device))
}
