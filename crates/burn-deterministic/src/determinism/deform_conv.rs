//! `deform_conv2d`'s input gradient without float atomics.
//!
//! The native backward (CubeCL, ndarray) scatters every column-gradient element onto the (up
//! to four) input pixels its bilinear sample touched, with a float atomic add per pixel, so the
//! order in which the contributions to one pixel meet changes from run to run. The rewrite
//! computes the same sum in a fixed order from `B`'s own ops:
//!
//! 1. the column gradient `Wᵀ · g` per weight group (one batched matmul, as the native code);
//! 2. per corner `(⌊y⌋ + dy, ⌊x⌋ + dx)`: the target pixel, the weight `(1 - |y - yp|)·(1 - |x - xp|)`
//!    (the native kernel's own expression) times the modulation mask, and whether the corner
//!    lies inside the image and within one pixel of the sample (the native kernel's test);
//! 3. one `float_scatter_add` along the flattened pixel axis per corner. `scatter_add` is
//!    sequential per target row on every Burn 0.21 backend (CubeCL: one unit per `(batch,
//!    channel)` loops over the updates; flex and ndarray: plain loops), so each pixel adds its
//!    contributions corner by corner, kernel tap by kernel tap, output pixel by output pixel.
//!
//! Cost against the native kernel: the other gradients still come from `B`'s backward (its
//! input gradient is computed and dropped), plus the column matmul again, a few element-wise
//! passes over `[batch, offset groups, kernel taps, output pixels]`, and four scatters whose
//! parallelism is `batch × channels` units on CubeCL.

use burn::tensor::{Element, Int, Tensor, TensorData, TensorPrimitive};
use burn_backend::ops::DeformConvOptions;
use burn_backend::tensor::{BasicOps, FloatTensor, IndexingUpdateOp};
use burn_backend::{Backend, Shape, TensorMetadata};

type Float<B, const D: usize> = Tensor<B, D>;

fn float<B: Backend, const D: usize>(tensor: FloatTensor<B>) -> Float<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(tensor))
}

/// The gradient of `deform_conv2d(x, offset, weight, mask)` with respect to `x`, given the
/// output gradient, summed in a fixed order (see the module docs).
pub(crate) fn input_grad<B: Backend>(
    x_shape: Shape,
    offset: FloatTensor<B>,
    weight: FloatTensor<B>,
    mask: Option<FloatTensor<B>>,
    output_grad: FloatTensor<B>,
    options: &DeformConvOptions<2>,
) -> FloatTensor<B> {
    let [batch, channels, height, width] = x_shape.dims();
    let [out_channels, channels_per_group, kernel_h, kernel_w] = weight.shape().dims();
    let [_, _, out_h, out_w] = output_grad.shape().dims();
    let (groups, offset_groups) = (options.weight_groups, options.offset_groups);
    let (taps, pixels) = (kernel_h * kernel_w, out_h * out_w);
    let device = B::float_device(&output_grad);

    // 1. Column gradient, [batch, channels, taps, pixels]: channel c = group·(C/G) + c'.
    let weight = float::<B, 4>(weight)
        .reshape([groups, out_channels / groups, channels_per_group * taps])
        .swap_dims(1, 2);
    let output_grad = float::<B, 4>(output_grad).swap_dims(0, 1).reshape([
        groups,
        out_channels / groups,
        batch * pixels,
    ]);
    let columns = weight
        .matmul(output_grad)
        .reshape([channels, taps, batch, pixels])
        .permute([2, 0, 1, 3]);
    let dtype = columns.dtype();

    // 2. Sample positions, [batch, offset groups, taps, pixels]: the regular grid position
    //    (exact small integers, computed on the host) plus the learned offset.
    let offset = float::<B, 4>(offset).reshape([batch, offset_groups, taps, 2, pixels]);
    let offset_y = offset
        .clone()
        .narrow(3, 0, 1)
        .reshape([batch, offset_groups, taps, pixels]);
    let offset_x = offset
        .narrow(3, 1, 1)
        .reshape([batch, offset_groups, taps, pixels]);
    let grid = |axis: usize| {
        let mut values = Vec::with_capacity(taps * pixels);
        for (tap_y, tap_x) in (0..kernel_h).flat_map(|ty| (0..kernel_w).map(move |tx| (ty, tx))) {
            for (out_y, out_x) in (0..out_h).flat_map(|oy| (0..out_w).map(move |ox| (oy, ox))) {
                let (out, tap) = if axis == 0 {
                    (out_y, tap_y)
                } else {
                    (out_x, tap_x)
                };
                let start = (out * options.stride[axis] + tap * options.dilation[axis]) as f64;
                values.push((start - options.padding[axis] as f64) as f32);
            }
        }
        let data = TensorData::new(values, [1, 1, taps, pixels]).convert_dtype(dtype);
        Float::<B, 4>::from_data(data, (&device, dtype))
    };
    let y = offset_y + grid(0);
    let x = offset_x + grid(1);
    let modulation =
        mask.map(|mask| float::<B, 4>(mask).reshape([batch, offset_groups, taps, pixels]));

    let to_channels = [batch, offset_groups, channels / offset_groups, taps, pixels];
    let columns = columns.reshape([batch, channels, taps * pixels]);

    // 3. One ordered scatter per corner.
    let (y_floor, x_floor) = (y.clone().floor(), x.clone().floor());
    let corners = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)];
    let grad = Float::<B, 3>::zeros([batch, channels, height * width], (&device, dtype));
    let grad = corners.into_iter().fold(grad, |grad, (dy, dx)| {
        let y_corner = y_floor.clone().add_scalar(dy);
        let x_corner = x_floor.clone().add_scalar(dx);
        let y_distance = (y.clone() - y_corner.clone()).abs();
        let x_distance = (x.clone() - x_corner.clone()).abs();
        let inside = y_distance
            .clone()
            .lower_elem(1.0)
            .bool_and(x_distance.clone().lower_elem(1.0))
            .bool_and(y_corner.clone().greater_equal_elem(0.0))
            .bool_and(y_corner.clone().lower_elem(height as f64))
            .bool_and(x_corner.clone().greater_equal_elem(0.0))
            .bool_and(x_corner.clone().lower_elem(width as f64));
        let bilinear = y_distance.neg().add_scalar(1.0) * x_distance.neg().add_scalar(1.0);
        let coefficient = match &modulation {
            Some(mask) => mask.clone() * bilinear,
            None => bilinear,
        };
        // Outside corners add an exact zero to pixel 0 (masked, so a NaN column stays out).
        let outside = per_channel(inside.bool_not(), to_channels);
        let values = per_channel(coefficient, to_channels) * columns.clone();
        let values = values.mask_fill(outside.clone(), 0.0);
        let target: Tensor<B, 4, Int> = y_corner.int() * width as i64 + x_corner.int();
        let target = per_channel(target, to_channels).mask_fill(outside, 0);
        grad.scatter(2, target, values, IndexingUpdateOp::Add)
    });
    grad.reshape([batch, channels, height, width])
        .into_primitive()
        .tensor()
}

/// An offset group's values for each of its channels: `[batch, offset groups, taps, pixels]` →
/// `[batch, channels, taps·pixels]`, channel `c` reading offset group `c / (C / offset groups)`.
fn per_channel<B: Backend, K: BasicOps<B>>(
    values: Tensor<B, 4, K>,
    to_channels: [usize; 5],
) -> Tensor<B, 3, K>
where
    K::Elem: Element,
{
    let [batch, offset_groups, per_group, taps, pixels] = to_channels;
    values.unsqueeze_dim::<5>(2).expand(to_channels).reshape([
        batch,
        offset_groups * per_group,
        taps * pixels,
    ])
}
