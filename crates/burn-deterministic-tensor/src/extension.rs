//! Mechanism (b): a Burn 0.22 backend extension. The forward is the selected backend's own
//! `interpolate` kernel (Burn's output, bit for bit); the backward is a handwritten autodiff step,
//! `dx[n, c] = Whᵀ · g[n, c] · Ww`, two GEMMs of the backend with the maps read for the forward's
//! geometry. Burn's `#[backend_extension]` generates only the routing through its `Dispatch`
//! enum; the `Autodiff` implementation below is what registers the adjoint.
//!
//! Backends: flex (feature `extension-flex`) and the CubeCL backends (feature `extension-wgpu`:
//! Burn 0.22 has one `Cube` backend type for every CubeCL runtime). An unlisted backend panics in Burn's routing,
//! so [`try_interpolate`] checks the device first.

use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::CheckpointStrategy};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::autodiff::Autodiff;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Backend, Dispatch, DispatchDevice, TensorMetadata};
use burn::tensor::ops::InterpolateOptions;
use burn::tensor::{Shape, Tensor};

use crate::separable::{axis_maps, width_first};
use crate::ResizeError;

#[backend_extension(Autodiff, Flex: cfg(feature = "extension-flex"), Cube: cfg(feature = "extension-wgpu"))]
pub trait AdjointInterpolateBackend: Backend {
    /// `x: [N, C, H, W] → [N, C, P, Q]` by the backend's own kernel (`options.output_size` is
    /// `[P, Q]`). `wh: [P, H]` and `ww: [Q, W]` are the kernel's per-axis maps: unused here, the
    /// backward of the `Autodiff` implementation multiplies by them.
    fn adjoint_interpolate(
        x: FloatTensor<Self>,
        wh: FloatTensor<Self>,
        ww: FloatTensor<Self>,
        options: InterpolateOptions,
    ) -> FloatTensor<Self> {
        let _ = (wh, ww);
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
        wh: FloatTensor<Self>,
        ww: FloatTensor<Self>,
        options: InterpolateOptions,
    ) -> FloatTensor<Self> {
        // The maps are constants of the graph: their own nodes are not followed.
        let (wh, ww) = (wh.into_primitive(), ww.into_primitive());
        match AdjointBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let y =
                    B::adjoint_interpolate(x.primitive().clone(), wh.clone(), ww.clone(), options);
                prep.finish((wh, ww), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::adjoint_interpolate(x.into_primitive(), wh, ww, options))
            }
        }
    }
}

/// The backward of [`AdjointInterpolateBackend::adjoint_interpolate`]: its state is `(Wh, Ww)`.
#[derive(Debug)]
struct AdjointBackward;

impl<B: Backend> Backward<B, 1> for AdjointBackward {
    type State = (FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [parent] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(parent) = parent {
            let (wh, ww) = ops.state;
            grads.register::<B>(parent.id, adjoint::<B>(g, wh, ww));
        }
    }
}

/// `dx[n, c] = Whᵀ · g[n, c] · Ww` for `g: [N, C, P, Q]`, `Wh: [P, H]`, `Ww: [Q, W]`: two
/// broadcast GEMMs in [`width_first`]'s order.
fn adjoint<B: Backend>(
    g: FloatTensor<B>,
    wh: FloatTensor<B>,
    ww: FloatTensor<B>,
) -> FloatTensor<B> {
    let [p, h] = matrix_dims(&wh);
    let [q, w] = matrix_dims(&ww);
    let wh_t = B::float_reshape(B::float_transpose(wh), Shape::new([1, 1, h, p]));
    let ww = B::float_reshape(ww, Shape::new([1, 1, q, w]));
    if width_first([p, q], [h, w]) {
        B::float_matmul(wh_t, B::float_matmul(g, ww))
    } else {
        B::float_matmul(B::float_matmul(wh_t, g), ww)
    }
}

fn matrix_dims<T: TensorMetadata>(matrix: &T) -> [usize; 2] {
    matrix.shape().dims::<2>()
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
pub fn try_interpolate(
    x: Tensor<4>,
    options: InterpolateOptions,
) -> Result<Tensor<4>, ResizeError> {
    let device = x.device().inner();
    if !routed(device.as_dispatch()) {
        return Err(ResizeError::NotRouted {
            device: format!("{device:?}"),
        });
    }
    let maps = axis_maps(&x, &options)?;
    let options = InterpolateOptions {
        output_size: Some(maps.output),
        scale_factor: None,
        ..options
    };
    Ok(Tensor::from_dispatch(
        <Dispatch as AdjointInterpolateBackend>::adjoint_interpolate(
            x.into_dispatch(),
            maps.height.into_dispatch(),
            maps.width.into_dispatch(),
            options,
        ),
    ))
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
