//! `deform_conv2d` whose input gradient meets its sums in one fixed order.
//!
//! Burn 0.22.1's CubeCL backward adds every column-gradient element onto the (up to four)
//! input pixels its bilinear sample touched with a float atomic per pixel
//! (`deform_col2img`), so a pixel that many samples read gets a different rounding from run to
//! run. Burn 0.22 gives no backend type to replace that backward in, so the crate changes what
//! autodiff sees instead:
//!
//! `y = burn(x̄) − (L(x)̄ − L(x))`, where `burn` is Burn's own `deform_conv2d` with `x` detached
//! (`x̄`), and `L` is the same convolution's dependence on `x` written as fixed-order tensor
//! ops — the samples read with the pairwise gather of [`super::gather`]'s engine, weighted on
//! the host with the native kernel's own expressions, summed over the four corners per axis,
//! multiplied by the (detached) weight. The bracket is an exact zero wherever `L(x)` is finite,
//! so the forward is Burn's, bit for bit; its gradient with respect to `x` is `L`'s adjoint:
//! the column gradient `Wᵀ · g` (a GEMM), weighted, added per pixel in the plan's pairwise
//! order. The offset, mask, weight and bias gradients are Burn's own (fixed-order GEMMs and
//! per-sample loops).
//!
//! Cost: the offsets (and mask) are read to the host once per call, and the forward runs the
//! sampling and the GEMM a second time (for `L`) — only when `x` takes part in autodiff.

use super::rows::gather_rows;
use burn::tensor::ops::DeformConvOptions;
use burn::tensor::{DType, Tensor, TensorData};
use burn_deterministic_core::{corner_samples, DeformGeometry, PairwisePlan};

/// `burn::tensor::module::deform_conv2d`, with an input gradient whose sums meet in one fixed
/// order; the forward and every other gradient are Burn's.
///
/// ```rust
/// use burn::tensor::module;
/// use burn::tensor::ops::DeformConvOptions;
/// use burn::tensor::{Device, Distribution, Tensor};
/// use burn_deterministic_tensor::fixed_order;
///
/// let device = Device::flex().autodiff();
/// let x = Tensor::<4>::random([1, 2, 5, 5], Distribution::Default, &device).require_grad();
/// let offset = Tensor::<4>::random([1, 18, 5, 5], Distribution::Default, &device);
/// let weight = Tensor::<4>::random([3, 2, 3, 3], Distribution::Default, &device);
/// let options = DeformConvOptions::new([1, 1], [1, 1], [1, 1], 1, 1);
/// let y = fixed_order::deform_conv2d(x.clone(), offset.clone(), weight.clone(), None, None, options.clone());
/// let burns = module::deform_conv2d(x.clone(), offset, weight, None, None, options);
/// assert_eq!(y.to_data(), burns.to_data()); // Burn's forward, bit for bit
/// let dx = x.grad(&y.sum().backward()).unwrap();
/// assert_eq!(dx.dims(), [1, 2, 5, 5]);
/// ```
///
/// # Panics
///
/// Where Burn's `deform_conv2d` panics (shapes that do not fit), and on an input whose dtype is
/// not a float dtype.
pub fn deform_conv2d(
    x: Tensor<4>,
    offset: Tensor<4>,
    weight: Tensor<4>,
    mask: Option<Tensor<4>>,
    bias: Option<Tensor<1>>,
    options: DeformConvOptions<2>,
) -> Tensor<4> {
    let tracks_input = x.is_tracked();
    let burns = burn::tensor::module::deform_conv2d(
        x.clone().detach(),
        offset.clone(),
        weight.clone(),
        mask.clone(),
        bias,
        options.clone(),
    );
    if !tracks_input {
        return burns;
    }
    crate::report::record(&x.device(), crate::report::Rewrite::DeformConv2dInputGrad);
    let [_, _, out_h, out_w] = burns.dims();
    let linear = input_path(
        x,
        offset.detach(),
        weight.detach(),
        mask.map(Tensor::detach),
        &options,
        [out_h, out_w],
    );
    burns - (linear.clone().detach() - linear)
}

/// The convolution's linear dependence on `x` (no bias), as tensor ops whose autodiff adds
/// every pixel's contributions in one fixed order.
fn input_path(
    x: Tensor<4>,
    offset: Tensor<4>,
    weight: Tensor<4>,
    mask: Option<Tensor<4>>,
    options: &DeformConvOptions<2>,
    output: [usize; 2],
) -> Tensor<4> {
    let [batch, channels, height, width] = x.dims();
    let [out_channels, channels_per_group, kernel_h, kernel_w] = weight.dims();
    let (groups, offset_groups) = (options.weight_groups, options.offset_groups);
    let (device, dtype) = (x.device(), x.dtype());
    let geometry = DeformGeometry {
        batch,
        offset_groups,
        input: [height, width],
        kernel: [kernel_h, kernel_w],
        output,
        stride: options.stride,
        padding: options.padding,
        dilation: options.dilation,
    };
    let (taps, pixels) = (kernel_h * kernel_w, output[0] * output[1]);
    let per_offset_group = channels / offset_groups;

    // Where each sample's four corners read, and their weights (in the input's precision, as
    // the native kernel computes them; f32 for half types).
    let (rows, weights) = match dtype {
        DType::F64 => {
            let (rows, weights) = corner_samples(
                &geometry,
                &host::<f64>(offset),
                mask.map(host::<f64>).as_deref(),
            );
            let samples = rows.len();
            (rows, TensorData::new(weights, [samples, 1]))
        }
        _ => {
            let (rows, weights) = corner_samples(
                &geometry,
                &host::<f32>(offset),
                mask.map(host::<f32>).as_deref(),
            );
            let samples = rows.len();
            (rows, TensorData::new(weights, [samples, 1]))
        }
    };
    let weights = Tensor::<2>::from_data(weights, (&device, dtype));

    // The input as rows of one (batch, offset group, pixel)'s channels, and a row of zeros for
    // the corners that read nothing.
    let pixel_rows = x
        .reshape([batch, offset_groups, per_offset_group, height * width])
        .swap_dims(2, 3)
        .reshape([geometry.pixel_rows(), per_offset_group]);
    let pixel_rows = Tensor::cat(
        vec![
            pixel_rows,
            Tensor::zeros([1, per_offset_group], (&device, dtype)),
        ],
        0,
    );
    let plan = PairwisePlan::new(&rows);
    let corners = gather_rows(pixel_rows, &plan) * weights;

    // Columns [batch, channels, taps, pixels]: the four corners summed (one fixed order).
    let columns = corners
        .reshape([batch * offset_groups * taps * pixels, 4, per_offset_group])
        .sum_dim(1)
        .reshape([batch, offset_groups, taps, pixels, per_offset_group])
        .permute([0, 1, 4, 2, 3])
        .reshape([batch, groups, channels_per_group * taps, pixels]);
    let weight = weight
        .reshape([groups, out_channels / groups, channels_per_group * taps])
        .unsqueeze_dim::<4>(0);
    weight
        .matmul(columns)
        .reshape([batch, out_channels, output[0], output[1]])
}

fn host<T: burn::tensor::Element>(tensor: Tensor<4>) -> Vec<T> {
    tensor.into_data().iter::<T>().collect()
}
