//! What the fixed-order rewrites cost: each one against `B`'s own op, in the same run.
//!
//! Ids `BACKEND/OP/SIZE/VARIANT` with VARIANT `native` (`B`'s op, the baseline) or `fixed_order`
//! (the decorator's rewrite; forced on ndarray, where it is not applied, to measure the
//! composition itself):
//! - `sum`: full sum of f32 values (flex: rewritten from 4 Mi elements; wgpu: always);
//! - `scatter_nd_add`: 4096 updates of rows of 64 into `[256, 64]`, every target repeated 16×
//!   (wgpu only: the native op loses updates there, so its time is that of a wrong answer);
//! - `deform_conv2d_fwd_bwd`: forward and backward of a 3×3 deformable convolution, 32 → 32
//!   channels on `[2, 32, 32, 32]`, offsets within ±2 pixels, with a mask (ndarray and wgpu,
//!   where the input gradient is rewritten; `native` is `Autodiff<B>`, `fixed_order` is
//!   `Autodiff<DeterministicBackend<B>>`).
//!
//! `cargo bench --bench fixed_order_ops --features flex` (add `wgpu` for software Vulkan, which
//! measures function, not GPU speed). `BENCH_QUICK=1` shortens the sampling.

use burn::tensor::backend::Backend;
use burn::tensor::{IndexingUpdateOp, Int, Tensor, TensorData};
use burn_deterministic::determinism::fixed_order_sum;
use burn_deterministic::DeterministicBackend;
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

fn sum_group<B: Backend>(c: &mut Criterion, backend: &str, device: &B::Device, sizes: &[usize]) {
    for &n in sizes {
        let x = Tensor::<B, 1>::random([n], burn::tensor::Distribution::Default, device);
        let mut group = c.benchmark_group(format!("{backend}/sum/{n}"));
        group.bench_function("native", |b| b.iter(|| x.clone().sum().into_data()));
        group.bench_function("fixed_order", |b| {
            b.iter(|| fixed_order_sum(x.clone()).into_data())
        });
        group.finish();
    }
}

#[allow(dead_code)]
fn scatter_nd_group<B: Backend>(c: &mut Criterion, backend: &str, device: &B::Device) {
    let updates = 4096;
    let targets: Vec<i64> = (0..updates).map(|i| (i % 256) as i64).collect();
    let mut group = c.benchmark_group(format!("{backend}/scatter_nd_add/{updates}x64"));
    fn run<B: Backend>(targets: &[i64], device: &B::Device) -> TensorData {
        let n = targets.len();
        let indices =
            Tensor::<B, 2, Int>::from_data(TensorData::new(targets.to_vec(), [n, 1]), device);
        let values = Tensor::<B, 2>::ones([n, 64], device);
        Tensor::<B, 2>::zeros([256, 64], device)
            .scatter_nd(indices, values, IndexingUpdateOp::Add)
            .into_data()
    }
    group.bench_function("native", |b| b.iter(|| run::<B>(&targets, device)));
    group.bench_function("fixed_order", |b| {
        b.iter(|| run::<DeterministicBackend<B>>(&targets, device))
    });
    group.finish();
}

#[allow(dead_code)]
fn deform_conv_group<B: Backend>(c: &mut Criterion, backend: &str, device: &B::Device) {
    use burn::backend::Autodiff;
    use burn::tensor::backend::AutodiffBackend;
    use burn::tensor::module::deform_conv2d;
    use burn::tensor::ops::DeformConvOptions;
    use burn::tensor::Distribution;
    fn run<A: AutodiffBackend>(device: &A::Device) -> TensorData {
        let (batch, channels, size) = (2, 32, 32);
        let uniform = |shape: [usize; 4], scale: f64| {
            Tensor::<A, 4>::random(shape, Distribution::Uniform(-scale, scale), device)
                .require_grad()
        };
        let x = uniform([batch, channels, size, size], 1.0);
        let offset = uniform([batch, 2 * 9, size, size], 2.0);
        let weight = uniform([channels, channels, 3, 3], 0.1);
        let mask = uniform([batch, 9, size, size], 1.0);
        let options = DeformConvOptions::new([1, 1], [1, 1], [1, 1], 1, 1);
        let out = deform_conv2d(x.clone(), offset, weight, Some(mask), None, options);
        let grads = (out.clone() * out).sum().backward();
        x.grad(&grads).expect("an input gradient").into_data()
    }
    let mut group = c.benchmark_group(format!("{backend}/deform_conv2d_fwd_bwd/2x32x32x32"));
    group.bench_function("native", |b| b.iter(|| run::<Autodiff<B>>(device)));
    group.bench_function("fixed_order", |b| {
        b.iter(|| run::<Autodiff<DeterministicBackend<B>>>(device))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    #[cfg(feature = "ndarray")]
    sum_group::<burn::backend::NdArray>(c, "ndarray", &Default::default(), &[1 << 20, 8 << 20]);
    #[cfg(feature = "ndarray")]
    deform_conv_group::<burn::backend::NdArray>(c, "ndarray", &Default::default());
    #[cfg(feature = "flex")]
    sum_group::<burn::backend::Flex>(c, "flex", &Default::default(), &[1 << 20, 8 << 20]);
    #[cfg(feature = "wgpu")]
    if let Some(device) = burn_deterministic_suite::wgpu_setup::vulkan_device() {
        sum_group::<burn::backend::Wgpu>(c, "wgpu", &device, &[1 << 20]);
        scatter_nd_group::<burn::backend::Wgpu>(c, "wgpu", &device);
        deform_conv_group::<burn::backend::Wgpu>(c, "wgpu", &device);
    }
}

fn config() -> Criterion {
    let quick = std::env::var("BENCH_QUICK").is_ok();
    Criterion::default()
        .sample_size(if quick { 10 } else { 30 })
        .warm_up_time(Duration::from_secs(if quick { 1 } else { 2 }))
        .measurement_time(Duration::from_secs(if quick { 2 } else { 5 }))
}

criterion_group! {
    name = group;
    config = config();
    targets = benches
}
criterion_main!(group);
