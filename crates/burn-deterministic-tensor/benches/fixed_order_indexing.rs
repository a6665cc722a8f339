//! The fixed-order indexing ops and `deform_conv2d` against Burn 0.22.1's own, in the same run,
//! on flex (CPU) and wgpu (Vulkan; llvmpipe without a GPU), f32:
//!
//! - `gather_backward/{device}/{rows}`: a gather of 1 Mi indices from a table of `rows`
//!   elements, forward and backward (`rows` = 1 Ki: each index repeats ~1000 times, the
//!   plan ten levels deep; 1 Mi: a random permutation-like spread, mostly single);
//! - `scatter_add/{device}`: 1 Mi values added into 1 Ki places;
//! - `deform_conv2d/{device}`: a `[2, 16, 32, 32]` deformable 3×3 convolution to 16
//!   channels, forward and backward.
//!
//! ```sh
//! cargo bench -p burn-deterministic-tensor --all-features --bench fixed_order_indexing
//! ```
//!
//! At the end it prints every `fixed_order / burn` ratio of medians of this run.

use burn::tensor::module;
use burn::tensor::ops::DeformConvOptions;
use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_deterministic_tensor::fixed_order;
use criterion::Criterion;

#[path = "../tests/common/mod.rs"]
mod common;
use common::uniform;

const INDICES: usize = 1 << 20;

fn floats<const D: usize>(seed: u64, shape: [usize; D], device: &Device) -> Tensor<D> {
    let n = shape.iter().product();
    Tensor::from_data(
        TensorData::new(uniform(seed, n), shape),
        (device, DType::F32),
    )
}

fn indices(rows: usize, device: &Device) -> Tensor<1, Int> {
    let spread: Vec<i64> = (0..INDICES as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) % rows as u64) as i64)
        .collect();
    Tensor::from_data(TensorData::new(spread, [INDICES]), device)
}

type Gather = fn(Tensor<1>, usize, Tensor<1, Int>) -> Tensor<1>;
type Scatter = fn(Tensor<1>, usize, Tensor<1, Int>, Tensor<1>, IndexingUpdateOp) -> Tensor<1>;

fn bench_device(c: &mut Criterion, name: &str, device: &Device) {
    let autodiff = device.clone().autodiff();
    for rows in [1 << 10, 1 << 20] {
        let table = floats(1, [rows], &autodiff);
        let index = indices(rows, &autodiff);
        let upstream = floats(2, [INDICES], &autodiff);
        let mut group = c.benchmark_group(format!("gather_backward/{name}/{rows}"));
        let gathers: [(&str, Gather); 2] = [
            ("burn", |x, d, i| x.gather(d, i)),
            ("fixed_order", fixed_order::gather),
        ];
        for (label, gather) in gathers {
            group.bench_function(label, |b| {
                b.iter(|| {
                    let x = table.clone().require_grad();
                    let y = gather(x.clone(), 0, index.clone());
                    let grads = (y * upstream.clone()).sum_dim(0).backward();
                    let grad = x.grad(&grads).expect("a gradient");
                    autodiff.sync().expect("device sync");
                    grad
                })
            });
        }
        group.finish();
    }

    let index = indices(1 << 10, device);
    let values = floats(3, [INDICES], device);
    let zeros = Tensor::<1>::zeros([1 << 10], device);
    let mut group = c.benchmark_group(format!("scatter_add/{name}"));
    let scatters: [(&str, Scatter); 2] = [
        ("burn", |x, d, i, v, u| x.scatter(d, i, v, u)),
        ("fixed_order", fixed_order::scatter),
    ];
    for (label, scatter) in scatters {
        group.bench_function(label, |b| {
            b.iter(|| {
                let y = scatter(
                    zeros.clone(),
                    0,
                    index.clone(),
                    values.clone(),
                    IndexingUpdateOp::Add,
                );
                device.sync().expect("device sync");
                y
            })
        });
    }
    group.finish();

    let x = floats(4, [2, 16, 32, 32], &autodiff);
    let offset = floats(5, [2, 18, 32, 32], &autodiff).mul_scalar(2.0);
    let weight = floats(6, [16, 16, 3, 3], &autodiff);
    let upstream = floats(7, [2, 16, 32, 32], &autodiff);
    let options = DeformConvOptions::new([1, 1], [1, 1], [1, 1], 1, 1);
    let mut group = c.benchmark_group(format!("deform_conv2d/{name}"));
    let deforms: [(&str, common::DeformConv2d); 2] = [
        ("burn", module::deform_conv2d),
        ("fixed_order", fixed_order::deform_conv2d),
    ];
    for (label, deform) in deforms {
        group.bench_function(label, |b| {
            b.iter(|| {
                let x = x.clone().require_grad();
                let weight = weight.clone().require_grad();
                let y = deform(
                    x.clone(),
                    offset.clone(),
                    weight.clone(),
                    None,
                    None,
                    options.clone(),
                );
                let grads = (y * upstream.clone()).sum_dim(1).backward();
                let grad = x.grad(&grads).expect("a gradient");
                autodiff.sync().expect("device sync");
                grad
            })
        });
    }
    group.finish();
}

fn main() {
    let mut c = common::bench_criterion();
    bench_device(&mut c, "flex", &Device::flex());
    let wgpu = common::vulkan_without_autodiff();
    bench_device(&mut c, "wgpu", &wgpu);
    c.final_summary();

    println!("\nfixed_order / burn (medians of this run; > 1: the fixed order costs more)");
    for name in ["flex", "wgpu"] {
        let groups = [
            format!("gather_backward/{name}/{}", 1 << 10),
            format!("gather_backward/{name}/{}", 1 << 20),
            format!("scatter_add/{name}"),
            format!("deform_conv2d/{name}"),
        ];
        for group in groups {
            if let (Some(burn), Some(ours)) = (
                common::bench_median(&group, "burn"),
                common::bench_median(&group, "fixed_order"),
            ) {
                println!(
                    "{group:32} fixed_order {:9.3} ms  burn {:9.3} ms  ×{:.2}",
                    ours * 1e3,
                    burn * 1e3,
                    ours / burn
                );
            }
        }
    }
}
