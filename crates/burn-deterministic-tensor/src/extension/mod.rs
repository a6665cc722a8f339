//! Mechanism (b): a Burn 0.22 backend extension. The forward is the selected backend's own
//! `interpolate` kernel (Burn's output, bit for bit); the backward is a handwritten autodiff step,
//! `dx[n, c] = Whᵀ · g[n, c] · Ww`, one pass per axis with the maps read for the forward's
//! geometry, each dense or banded (by the configuration; the passes are in `adjoint.rs`). Burn's
//! `#[backend_extension]` generates only the routing through its `Dispatch` enum; the `Autodiff`
//! implementation below is what registers the adjoint.
//!
//! Backends: flex (feature `extension-flex`) and the CubeCL backends (feature `extension-wgpu`:
//! Burn 0.22 has one `Cube` backend type for every CubeCL runtime). An unlisted backend panics
//! in Burn's routing, so [`try_interpolate`] checks the device first.

mod adjoint;

pub use adjoint::AxisAdjoint;

use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::CheckpointStrategy};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::autodiff::Autodiff;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Backend, Dispatch, DispatchDevice};
use burn::tensor::ops::InterpolateOptions;
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_core::{AxisEstimate, BandPolicy, Layout};

use crate::config::{DeterministicConfig, WeightLayout};
use crate::error::output_size;
use crate::separable::{adjoint_band, axis_matrix, resampling, AxisSizes};
use crate::{Axis, ResizeError};

// Public because Burn's `#[backend_extension]` routing needs it; call `try_interpolate`.
#[doc(hidden)]
#[backend_extension(Autodiff, Flex: cfg(feature = "extension-flex"), Cube: cfg(feature = "extension-wgpu"))]
pub trait AdjointInterpolateBackend: Backend {
    /// `x: [N, C, H, W] → [N, C, P, Q]` by the backend's own kernel (`options.output_size` is
    /// `[P, Q]`). `height` and `width` are the axes' maps as `layouts` says (`Wh: [P, H]` and
    /// `Ww: [Q, W]`, or the bands of their transposes): unused here, the backward of the
    /// `Autodiff` implementation multiplies by them.
    fn adjoint_interpolate(
        x: FloatTensor<Self>,
        height: FloatTensor<Self>,
        width: FloatTensor<Self>,
        layouts: [AxisAdjoint; 2],
        options: InterpolateOptions,
    ) -> FloatTensor<Self> {
        let _ = (height, width, layouts);
        let size = options.output_size.expect("the caller sets output_size");
        Self::interpolate(x, size, options)
    }
}

#[cfg(feature = "extension-flex")]
impl AdjointInterpolateBackend for burn::backend::Flex {}

#[cfg(feature = "extension-wgpu")]
impl AdjointInterpolateBackend for burn::backend::Cube {}

impl<B: AdjointInterpolateBackend, C: CheckpointStrategy> AdjointInterpolateBackend
    for Autodiff<B, C>
{
    fn adjoint_interpolate(
        x: FloatTensor<Self>,
        height: FloatTensor<Self>,
        width: FloatTensor<Self>,
        layouts: [AxisAdjoint; 2],
        options: InterpolateOptions,
    ) -> FloatTensor<Self> {
        // The maps are constants of the graph: their own nodes are not followed.
        let maps = [height.into_primitive(), width.into_primitive()];
        match AdjointBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let [height, width] = maps.clone();
                let x = x.primitive().clone();
                let y = B::adjoint_interpolate(x, height, width, layouts.clone(), options);
                prep.finish((maps, layouts), y)
            }
            OpsKind::UnTracked(prep) => {
                let [height, width] = maps;
                let y = B::adjoint_interpolate(x.into_primitive(), height, width, layouts, options);
                prep.finish(y)
            }
        }
    }
}

/// The backward of [`AdjointInterpolateBackend::adjoint_interpolate`]: its state is the axes'
/// maps and their layouts.
#[derive(Debug)]
struct AdjointBackward;

impl<B: Backend> Backward<B, 1> for AdjointBackward {
    type State = ([FloatTensor<B>; 2], [AxisAdjoint; 2]);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [parent] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(parent) = parent {
            let (maps, layouts) = ops.state;
            grads.register::<B>(parent.id, adjoint::adjoint::<B>(g, maps, &layouts));
        }
    }
}

/// [`crate::interpolate`] by mechanism (b): Burn's own forward kernel, this crate's adjoint as
/// the backward. The same results as mechanism (a) to rounding (the forward is bit for bit
/// Burn's), on flex and the CubeCL backends.
///
/// # Panics
///
/// Where [`try_interpolate`] returns an error, with its message.
pub fn interpolate(x: Tensor<4>, options: InterpolateOptions) -> Tensor<4> {
    try_interpolate(x, options).unwrap_or_else(|error| panic!("{error}"))
}

/// [`interpolate`], with bad options, and a backend this mechanism does not route to (Burn's
/// routing would panic), returned as an error before any kernel runs.
///
/// The adjoint's layout per axis comes from the configuration ([`crate::config`]): `layout`
/// dense or banded in blocks of `block_size`, or under `auto` banded where that saves at least
/// 8× the dense multiply-adds ([`BandPolicy::adjoint`], measured on this backward; the Burn 0.21
/// decorator's bar is `banded_min_gain`) or where the dense map would not fit in
/// `max_weight_bytes`. The layout changes the gradient's rounding only (the same weights,
/// summed in other groups), never its determinism; the forward is Burn's kernel either way.
/// `block_size: 1` keeps windows exact: a non-finite gradient value reaches only the inputs
/// whose taps it touches.
pub fn try_interpolate(
    x: Tensor<4>,
    options: InterpolateOptions,
) -> Result<Tensor<4>, ResizeError> {
    let device = x.device().inner();
    if !routed(device.as_dispatch()) {
        return Err(ResizeError::NotRouted {
            device: format!("{device:?}"),
            remedy: "the backend extension is implemented for flex and the CubeCL backends: \
                     enable this crate's `extension-flex` or `extension-wgpu` feature, or use \
                     `burn_deterministic_tensor::interpolate`",
        });
    }
    let [_, _, h, w] = x.dims();
    let [p, q] = output_size(x.dims(), &options)?;
    let (device, dtype) = (x.device(), x.dtype());
    let height = AxisSizes {
        axis: Axis::Height,
        input: h,
        output: p,
    };
    let width = AxisSizes {
        axis: Axis::Width,
        input: w,
        output: q,
    };
    let config = crate::config::current();
    crate::autotune_rule(&device, config.strict)?;
    let (height, height_layout) = axis_map(height, &options, dtype, &device, &config)?;
    let (width, width_layout) = axis_map(width, &options, dtype, &device, &config)?;
    if x.is_tracked() {
        // The forward is Burn's own kernel; the backward this crate's adjoint.
        let layout = |map: &AxisAdjoint| match map {
            AxisAdjoint::Dense => Layout::Dense,
            AxisAdjoint::Banded(band) => Layout::Banded {
                block_size: band.block,
            },
        };
        crate::report::record(
            &device,
            crate::report::Rewrite::ResizeBackward {
                mode: resampling(&options).mode,
                layouts: [layout(&height_layout), layout(&width_layout)],
            },
        );
    }
    let options = InterpolateOptions {
        output_size: Some([p, q]),
        scale_factor: None,
        ..options
    };
    Ok(Tensor::from_dispatch(
        <Dispatch as AdjointInterpolateBackend>::adjoint_interpolate(
            x.into_dispatch(),
            height,
            width,
            [height_layout, width_layout],
            options,
        ),
    ))
}

/// One axis' map for the backward, in the layout `config` gives it, with that layout.
fn axis_map(
    sizes: AxisSizes,
    options: &InterpolateOptions,
    dtype: DType,
    device: &Device,
    config: &DeterministicConfig,
) -> Result<(FloatTensor<Dispatch>, AxisAdjoint), ResizeError> {
    let banded = match config.layout {
        // `choose_layout` would say dense too; skipped so that no estimate is built for it.
        WeightLayout::Dense => None,
        _ => {
            // The axis' cost estimate (it lists every output's taps).
            let estimate = AxisEstimate::new(sizes.input, sizes.output, resampling(options))
                .ok_or(sizes.host_memory())?;
            let adjoint_policy = BandPolicy {
                block_size: config.block_size,
                ..BandPolicy::adjoint()
            };
            match config.choose_layout(&estimate, dtype.size(), adjoint_policy) {
                Layout::Banded { block_size } => Some((block_size, estimate)),
                _ => None,
            }
        }
    };
    Ok(match banded {
        None => {
            let matrix = axis_matrix(sizes, options, dtype, device, config)?;
            (matrix.into_dispatch(), AxisAdjoint::Dense)
        }
        Some((block_size, estimate)) => {
            let band = adjoint_band(sizes, options, dtype, device, config, block_size, &estimate)?;
            (
                band.weights.into_dispatch(),
                AxisAdjoint::Banded(band.shape),
            )
        }
    })
}

/// Whether the backend of a (non-autodiff) device is one this extension is implemented for.
fn routed(device: &DispatchDevice) -> bool {
    match device {
        #[cfg(feature = "extension-flex")]
        DispatchDevice::Flex(_) => true,
        #[cfg(feature = "extension-wgpu")]
        DispatchDevice::Cube(_) => true,
        #[allow(unreachable_patterns)]
        _ => false,
    }
}
