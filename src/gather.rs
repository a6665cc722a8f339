//! The *gather decomposition* of a separable resize, written with plain Burn tensor ops: per
//! axis, select the 2 (bilinear) or 4 (bicubic) taps of every output with `select` and blend them
//! with per-output weights. It is the way PyTorch's deterministic mode decomposes bilinear, and
//! what a Burn user would write by hand today; its backward (through autodiff) is a scatter-add
//! (`select_assign`). The benchmarks use it as a baseline.
//!
//! Coordinates follow Burn's kernels: `align_corners = true` maps `o · (in − 1)/(out − 1)`,
//! `false` maps `(o + 0.5) · in/out − 0.5`; taps are clamped to the border; bicubic uses
//! `A = −0.75`.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{Int, Tensor, TensorData};

/// `x: [N, C, H, W]` resized to `output_size` by gathering taps. Bilinear and bicubic only.
pub fn gather_resize<B: Backend>(
    x: Tensor<B, 4>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
) -> Tensor<B, 4> {
    let y = resize_axis(x, 2, output_size[0], options);
    resize_axis(y, 3, output_size[1], options)
}

/// Taps (input index per output) and their weights, one list per tap position.
fn taps(input: usize, output: usize, options: &InterpolateOptions) -> Vec<(Vec<i64>, Vec<f32>)> {
    let source = |o: usize| -> f64 {
        if options.align_corners {
            if output > 1 {
                o as f64 * (input as f64 - 1.0) / (output as f64 - 1.0)
            } else {
                0.0
            }
        } else {
            (o as f64 + 0.5) * input as f64 / output as f64 - 0.5
        }
    };
    let clamp = |i: i64| i.clamp(0, input as i64 - 1);
    match options.mode {
        InterpolateMode::Bilinear => {
            let (mut i0, mut i1, mut w0, mut w1) = (vec![], vec![], vec![], vec![]);
            for o in 0..output {
                let s = source(o).max(0.0);
                let f = s.floor();
                let t = (s - f) as f32;
                i0.push(clamp(f as i64));
                i1.push(clamp(f as i64 + 1));
                w0.push(1.0 - t);
                w1.push(t);
            }
            vec![(i0, w0), (i1, w1)]
        }
        InterpolateMode::Bicubic => {
            const A: f64 = -0.75;
            let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
            let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
            let mut lists = vec![(vec![], vec![]); 4];
            for o in 0..output {
                let s = source(o);
                let f = s.floor();
                let t = s - f;
                let weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)];
                for (k, list) in lists.iter_mut().enumerate() {
                    list.0.push(clamp(f as i64 - 1 + k as i64));
                    list.1.push(weights[k] as f32);
                }
            }
            lists
        }
        ref other => panic!("gather decomposition covers bilinear and bicubic, not {other:?}"),
    }
}

fn resize_axis<B: Backend>(
    x: Tensor<B, 4>,
    dim: usize,
    output: usize,
    options: &InterpolateOptions,
) -> Tensor<B, 4> {
    let device = x.device();
    let input = x.dims()[dim];
    let mut shape = [1, 1, 1, 1];
    shape[dim] = output;
    taps(input, output, options)
        .into_iter()
        .map(|(indices, weights)| {
            let indices =
                Tensor::<B, 1, Int>::from_data(TensorData::new(indices, [output]), &device);
            let weights = Tensor::<B, 1>::from_data(TensorData::new(weights, [output]), &device)
                .reshape(shape);
            x.clone().select(dim, indices) * weights
        })
        .reduce(|a, b| a + b)
        .expect("at least two taps")
}
