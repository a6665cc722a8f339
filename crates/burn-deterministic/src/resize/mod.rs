//! The resize engine: per-axis weights read off the inner kernel (`weights.rs`), applied dense or
//! banded (`axis.rs`), cached (`cache.rs`), and the policy that decides when to use them.
//!
//! A 2-D resize of `x: [N, C, H, W]` to `[N, C, P, Q]` is, per axis, a linear map: for every
//! mode Burn implements, `y[n, c] = Wh · x[n, c] · Wwᵀ` with `Wh: [P, H]` and `Ww: [Q, W]`.
//! Its adjoint, the gradient of `sum(y · g)`, is `dx[n, c] = Whᵀ · g[n, c] · Ww`. Both are two
//! GEMMs of the inner backend in a fixed order: no atomics, so the same inputs give the same
//! bits on every run.

mod axis;
mod cache;
mod weights;

pub use cache::{cache_stats, reset_cache, CacheStats};

use crate::config::{self, DeterministicConfig, RewritePolicy, WeightLayout};
use crate::{DeviceKind, ResizeError};
use axis::{AxisEstimate, AxisMap, Dim, Layout};
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, TensorMetadata};

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
pub fn interpolate<B: Backend>(
    x: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B> {
    let config = config::current();
    if !takes_over(&config, &options) {
        return B::interpolate(x, output_size, options);
    }
    let device = B::float_device(&x);
    owned::record::<B>(&x, &device, output_size, &options);
    if !rewrites_forward::<B>(config.policy, &device) {
        if let Err(e) = check_input::<B>(&x, output_size) {
            panic!("{e}");
        }
        return B::interpolate(x, output_size, options);
    }
    let checked = checked::<B>(&x, output_size, &options, &config);
    let plan = ResizePlan::<B>::new(&checked, output_size, &options, x.dtype(), &device, &config);
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
pub fn interpolate_backward<B: Backend>(
    x: FloatTensor<B>,
    grad: FloatTensor<B>,
    output_size: [usize; 2],
    options: InterpolateOptions,
) -> FloatTensor<B> {
    let config = config::current();
    let device = B::float_device(&x);
    if !takes_over(&config, &options) && !owned::contains::<B>(&x, &device, output_size, &options) {
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
    plan.adjoint(grad)
}

/// Whether `config` hands this resize to the decorator (forward policy aside).
fn takes_over(config: &DeterministicConfig, options: &InterpolateOptions) -> bool {
    config.policy != RewritePolicy::Never && config.modes.contains(&options.mode)
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
pub fn rewrites_forward<B: Backend>(policy: RewritePolicy, device: &B::Device) -> bool {
    match policy {
        RewritePolicy::Never => false,
        RewritePolicy::Always => true,
        RewritePolicy::Auto => {
            crate::device_profile(device).kind == DeviceKind::Accelerator || B::ad_enabled(device)
        }
    }
}

/// Checks that `x` can be resized to `output_size` under `config`, returning its dims
/// `[N, C, H, W]`. Runs before any kernel, so bad input fails with a message that names the
/// problem instead of deep inside a kernel; this includes weights that would not fit in
/// `max_weight_bytes` in any layout.
pub fn check_resize<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Result<[usize; 4], ResizeError> {
    check::<B>(x, output_size, options, config).map(|c| c.dims)
}

/// What [`check_resize`] established: the dims and each axis' layout.
struct Checked {
    dims: [usize; 4],
    layouts: [Layout; 2],
}

fn checked<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Checked {
    check::<B>(x, output_size, options, config).unwrap_or_else(|e| panic!("{e}"))
}

fn check<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Result<Checked, ResizeError> {
    config.validate().map_err(ResizeError::InvalidConfig)?;
    let dims = check_input::<B>(x, output_size)?;
    let dtype = x.dtype();
    let height = choose_layout("height", dims[2], output_size[0], options, dtype, config)?;
    let width = choose_layout("width", dims[3], output_size[1], options, dtype, config)?;
    Ok(Checked {
        dims,
        layouts: [height, width],
    })
}

/// The input and output sizes alone: what every path needs, the native one included (`B`'s
/// kernels fail on these too, deep inside, with messages that do not name the problem).
fn check_input<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
) -> Result<[usize; 4], ResizeError> {
    let shape = x.shape().to_vec();
    let dims: [usize; 4] =
        shape
            .clone()
            .try_into()
            .map_err(|_| ResizeError::NotFourDimensional {
                shape: shape.clone(),
            })?;
    if dims.contains(&0) {
        return Err(ResizeError::EmptyInput { shape });
    }
    if output_size.contains(&0) {
        return Err(ResizeError::EmptyOutput { output_size });
    }
    let dtype = x.dtype();
    let device = B::float_device(x);
    if !accepts_dtype(dtype, B::supports_dtype(&device, dtype)) {
        return Err(ResizeError::UnsupportedDtype {
            dtype,
            backend: B::name(&device),
        });
    }
    // Rust allocations are limited to `isize::MAX` bytes; so is every backend's output buffer.
    let output_bytes = axis::product(&[
        dims[0],
        dims[1],
        output_size[0],
        output_size[1],
        dtype.size(),
    ]);
    if output_bytes > isize::MAX as u64 {
        return Err(ResizeError::OutputTooLarge { shape, output_size });
    }
    Ok(dims)
}

/// Dense or banded for one axis. `auto` takes banded when it saves at least
/// `banded_min_gain`× the dense multiply-adds, or when the dense weights exceed
/// `max_weight_bytes`; either layout must fit in `max_weight_bytes`.
fn choose_layout(
    axis: &'static str,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
    config: &DeterministicConfig,
) -> Result<Layout, ResizeError> {
    let banded = Layout::Banded {
        block_size: config.block_size,
    };
    // Every layout holds at least one weight per output and one per input (and reading them
    // off the kernel, a response of that size): refuse what cannot fit before estimating,
    // which allocates per output.
    let floor = axis::product(&[input.saturating_add(output), dtype.size()]);
    if floor > config.max_weight_bytes {
        return Err(ResizeError::WeightsTooLarge {
            axis,
            input,
            output,
            layout: "any layout".into(),
            bytes: floor,
            limit: config.max_weight_bytes,
        });
    }
    let estimate = AxisEstimate::new(input, output, options).ok_or(ResizeError::HostMemory {
        axis,
        input,
        output,
    })?;
    let fits = |layout| estimate.bytes(layout, dtype) <= config.max_weight_bytes;
    let choice = match config.layout {
        WeightLayout::Dense => Layout::Dense,
        WeightLayout::Banded => banded,
        WeightLayout::Auto => {
            let dense_macs = estimate.macs(Layout::Dense);
            let banded_macs = estimate.macs(banded);
            let saves = dense_macs as f64 >= config.banded_min_gain * banded_macs as f64;
            if saves || !fits(Layout::Dense) {
                banded
            } else {
                Layout::Dense
            }
        }
    };
    if fits(choice) {
        return Ok(choice);
    }
    let bytes = estimate.bytes(choice, dtype);
    Err(ResizeError::WeightsTooLarge {
        axis,
        input,
        output,
        layout: format!("{choice:?}"),
        bytes,
        limit: config.max_weight_bytes,
    })
}

/// Whether `dtype` qualifies for the rewrite: the weights are built in it and multiplied by
/// `B`'s matmul, so only float dtypes `B` supports do. (The backends available today refuse to
/// create the others; the check keeps an exotic inner backend from failing inside a kernel.)
fn accepts_dtype(dtype: DType, supported_by_backend: bool) -> bool {
    dtype.is_float() && supported_by_backend
}

/// Both axes' maps for one resize, from the cache or built from `B`'s kernel.
struct ResizePlan<B: Backend> {
    height: AxisMap<B>,
    width: AxisMap<B>,
    input: [usize; 2],
    output: [usize; 2],
}

impl<B: Backend> ResizePlan<B> {
    fn new(
        checked: &Checked,
        output: [usize; 2],
        options: &InterpolateOptions,
        dtype: DType,
        device: &B::Device,
        config: &DeterministicConfig,
    ) -> Self {
        let input = [checked.dims[2], checked.dims[3]];
        let map = |axis: usize| {
            let layout = checked.layouts[axis];
            let key = cache::CacheKey::new::<B>(
                device,
                dtype,
                input[axis],
                output[axis],
                options,
                layout,
            );
            cache::get_or_build(
                key,
                config.cache_max_entries,
                config.cache_max_bytes,
                || AxisMap::build(layout, input[axis], output[axis], options, dtype, device),
            )
        };
        Self {
            height: map(0),
            width: map(1),
            input,
            output,
        }
    }

    /// `Wh · x · Wwᵀ`. Either order of the two axes is a fixed sequence of matmuls, so results
    /// are reproducible.
    fn forward(&self, x: FloatTensor<B>) -> FloatTensor<B> {
        if let (Some(height), Some(width)) =
            (self.height.uniform_forward(), self.width.uniform_forward())
        {
            // Both bands have uniform windows: pad the (small) input once along both axes,
            // then two transposing passes, `[N, C, H, W] → [N, C, Q, H] → [N, C, P, Q]`, whose
            // windows are views and whose results come out in the layout the next step reads.
            let padded = axis::pad_planes::<B>(x, [height.stride(), width.stride()]);
            return height.apply_transposed(width.apply_transposed(padded));
        }
        if self.height_first(self.input, self.output) {
            self.width
                .forward(self.height.forward(x, Dim::Height), Dim::Width)
        } else {
            self.height
                .forward(self.width.forward(x, Dim::Width), Dim::Height)
        }
    }

    /// `Whᵀ · g · Ww`, the exact adjoint of [`Self::forward`]'s map.
    fn adjoint(&self, g: FloatTensor<B>) -> FloatTensor<B> {
        if self.height_first(self.output, self.input) {
            self.width
                .adjoint(self.height.adjoint(g, Dim::Height), Dim::Width)
        } else {
            self.height
                .adjoint(self.width.adjoint(g, Dim::Width), Dim::Height)
        }
    }

    /// Whether to resize the height axis first, for a pass that takes `[h, w]` planes to
    /// `[p, q]` (the adjoint goes from the output size to the input size).
    ///
    /// Two dense maps: the order with fewer multiply-adds. With a banded map the multiply-adds
    /// are few and memory traffic decides: a banded width pass is a batch of thin GEMMs over
    /// every row, so it runs where the planes have fewer rows (measured on flex for
    /// `[8, 19, 128, 128] → [512, 512]`: a banded width pass over 512 rows costs 4× one over
    /// 128 rows, while the banded height pass writes its output in one piece either way).
    fn height_first(&self, [h, w]: [usize; 2], [p, q]: [usize; 2]) -> bool {
        let (mh, mw) = (self.height.macs() as u128, self.width.macs() as u128);
        let fewer_macs = mh * w as u128 + mw * p as u128 <= mw * h as u128 + mh * q as u128;
        if self.height.is_dense() && self.width.is_dense() || p == h {
            fewer_macs
        } else {
            p < h
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_supported_float_dtypes_are_accepted() {
        assert!(accepts_dtype(DType::F32, true));
        assert!(accepts_dtype(DType::F16, true));
        assert!(!accepts_dtype(DType::BF16, false));
        assert!(!accepts_dtype(DType::I32, true));
        let message = ResizeError::UnsupportedDtype {
            dtype: DType::BF16,
            backend: "wgpu<wgsl>".into(),
        }
        .to_string();
        assert_eq!(
            message,
            "burn-deterministic interpolate: dtype BF16 is not a float dtype that backend \
             wgpu<wgsl> supports"
        );
    }
}
