//! Computations whose native kernels add with float atomics on some backends: the negative
//! controls of the determinism tests (a check that cannot see their drift proves nothing).

use crate::harness::{tensor, uniform};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Tensor};

/// The input, offset, weight and mask gradients of a deformable convolution.
pub type DeformGrads<B> = [Tensor<B, 4>; 4];

/// A deformable convolution with every option away from its default (stride, padding,
/// dilation, two weight groups, two offset groups, a modulation mask), or, `crowded`, one whose
/// learned offsets pull every sample of a large padded output onto the same few input pixels,
/// so that each pixel's gradient adds thousands of contributions (where atomics race).
pub fn deform_conv_grads<B: AutodiffBackend>(
    device: &B::Device,
    crowded: bool,
) -> DeformGrads<B::InnerBackend> {
    use burn::tensor::module::deform_conv2d;
    use burn::tensor::ops::DeformConvOptions;
    let (batch, channels, out_channels, height, width) = (2, 4, 4, 7, 9);
    let (kernel, groups, offset_groups) = ([3, 2], 2, 2);
    let options = if crowded {
        DeformConvOptions::new([1, 1], [12, 12], [1, 1], groups, offset_groups)
    } else {
        DeformConvOptions::new([2, 1], [1, 2], [1, 2], groups, offset_groups)
    };
    let out = |axis: usize, size: usize| {
        (size + 2 * options.padding[axis] - options.dilation[axis] * (kernel[axis] - 1) - 1)
            / options.stride[axis]
            + 1
    };
    let (out_h, out_w) = (out(0, height), out(1, width));
    let taps = kernel[0] * kernel[1];
    let param = |seed: u64, shape: [usize; 4], scale: f64, shift: f64| {
        let n = shape.iter().product();
        let values: Vec<f64> = uniform(seed, n).iter().map(|v| v * scale + shift).collect();
        tensor::<B, 4>(&values, shape, DType::F32, device).require_grad()
    };
    let x = param(1, [batch, channels, height, width], 2.0, -1.0);
    let weight = param(
        2,
        [out_channels, channels / groups, kernel[0], kernel[1]],
        2.0,
        -1.0,
    );
    let mask = param(3, [batch, offset_groups * taps, out_h, out_w], 1.0, 0.0);
    let offset_shape = [batch, offset_groups * taps * 2, out_h, out_w];
    let offset = if crowded {
        // Offsets that move each sample from its grid position to near the image centre.
        let mut values = uniform(4, offset_shape.iter().product());
        for (i, v) in values.iter_mut().enumerate() {
            let (pixel, channel) = (
                i % (out_h * out_w),
                i / (out_h * out_w) % (taps * 2 * offset_groups),
            );
            let (tap, axis) = (channel / 2 % taps, channel % 2);
            let (out_pos, tap_pos, size) = if axis == 0 {
                (pixel / out_w, tap / kernel[1], height)
            } else {
                (pixel % out_w, tap % kernel[1], width)
            };
            let grid = (out_pos + tap_pos) as f64 - options.padding[axis] as f64;
            *v = size as f64 / 2.0 - 1.0 + 2.0 * *v - grid;
        }
        tensor::<B, 4>(&values, offset_shape, DType::F32, device).require_grad()
    } else {
        // Within ±3 pixels: some samples fall outside the image.
        param(4, offset_shape, 6.0, -3.0)
    };
    let output_weights = param(5, [batch, out_channels, out_h, out_w], 2.0, -1.0);
    let output = deform_conv2d(
        x.clone(),
        offset.clone(),
        weight.clone(),
        Some(mask.clone()),
        None,
        options,
    );
    let grads = (output * output_weights).sum().backward();
    [x, offset, weight, mask].map(|t| t.grad(&grads).expect("a gradient"))
}
