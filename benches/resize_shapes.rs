//! Per-call benchmarks on five training-like shapes, each against baselines measured in
//! the same run: the inner backend's native kernel and the gather decomposition.
//!
//! - (a) seg logits `[4,19,128,128] → [512,512]`, bilinear, align_corners=false
//! - (b) depth `[8,1,120,160] → [480,640]`, bilinear, align_corners=true
//! - (c) proto `[4,32,160,160] → [640,640]`, bilinear, align_corners=false
//! - (d) FPN step `[8,64,30,40]`, scale 2, bilinear, align_corners=true
//! - (e) bicubic `[4,3,256,256] → [512,512]`, align_corners=false
//!
//! For each: the forward, and forward + backward of `sum(y · g)` with a fixed `g`, for the
//! decorator (policy `always`, dense and banded), the native kernel (backward only where the
//! backend has one: flex) and the gather decomposition (backward: scatter-add).
//!
//! `cargo bench --bench resize_shapes --features flex [-- FILTER]`; with `--features wgpu` also
//! on wgpu (group `wgpu_functional_only`: on software Vulkan a functional check, not a speed
//! figure).

use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Tensor};
use burn_deterministic::{
    DeterministicBackend, DeterministicConfig, ModeSet, RewritePolicy, WeightLayout,
};
use burn_deterministic_suite::gather::gather_resize;
use burn_deterministic_suite::harness::{configured, tensor, uniform};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use std::time::Duration;

struct Shape {
    name: &'static str,
    input: [usize; 4],
    output: [usize; 2],
    mode: InterpolateMode,
    align_corners: bool,
}

fn shapes() -> [Shape; 5] {
    let s = |name, input: [usize; 4], output, mode, align_corners| Shape {
        name,
        input,
        output,
        mode,
        align_corners,
    };
    [
        s(
            "a_seg_logits",
            [4, 19, 128, 128],
            [512, 512],
            InterpolateMode::Bilinear,
            false,
        ),
        s(
            "b_depth",
            [8, 1, 120, 160],
            [480, 640],
            InterpolateMode::Bilinear,
            true,
        ),
        s(
            "c_proto",
            [4, 32, 160, 160],
            [640, 640],
            InterpolateMode::Bilinear,
            false,
        ),
        s(
            "d_fpn_step",
            [8, 64, 30, 40],
            [60, 80],
            InterpolateMode::Bilinear,
            true,
        ),
        s(
            "e_bicubic",
            [4, 3, 256, 256],
            [512, 512],
            InterpolateMode::Bicubic,
            false,
        ),
    ]
}

fn always(layout: WeightLayout) -> DeterministicConfig {
    DeterministicConfig::default()
        .with_policy(RewritePolicy::Always)
        .with_modes(ModeSet::all())
        .with_layout(layout)
}

/// How one variant resizes a tensor of backend `B`.
type Resizer<B> = fn(Tensor<B, 4>, [usize; 2], &InterpolateOptions) -> Tensor<B, 4>;

fn native<B: Backend>(
    x: Tensor<B, 4>,
    size: [usize; 2],
    options: &InterpolateOptions,
) -> Tensor<B, 4> {
    interpolate(x, size, options.clone())
}

fn forward<B: Backend>(
    group: &mut BenchmarkGroup<WallTime>,
    label: &str,
    shape: &Shape,
    device: &B::Device,
    resize: Resizer<B>,
) {
    let options =
        InterpolateOptions::new(shape.mode.clone()).with_align_corners(shape.align_corners);
    let x: Tensor<B, 4> = tensor(
        &uniform(1, shape.input.iter().product()),
        shape.input,
        DType::F32,
        device,
    );
    group.bench_function(format!("{}/forward/{label}", shape.name), |b| {
        b.iter(|| {
            let y = resize(x.clone(), shape.output, &options);
            B::sync(device).unwrap();
            y
        })
    });
}

fn forward_backward<B: AutodiffBackend>(
    group: &mut BenchmarkGroup<WallTime>,
    label: &str,
    shape: &Shape,
    device: &B::Device,
    resize: Resizer<B>,
) {
    let options =
        InterpolateOptions::new(shape.mode.clone()).with_align_corners(shape.align_corners);
    let x: Tensor<B, 4> = tensor(
        &uniform(1, shape.input.iter().product()),
        shape.input,
        DType::F32,
        device,
    );
    let [n, c, _, _] = shape.input;
    let out = [n, c, shape.output[0], shape.output[1]];
    let g: Tensor<B, 4> = tensor(&uniform(2, out.iter().product()), out, DType::F32, device);
    group.bench_function(format!("{}/forward_backward/{label}", shape.name), |b| {
        b.iter(|| {
            let x = x.clone().require_grad();
            let grads = (resize(x.clone(), shape.output, &options) * g.clone()).backward();
            let dx = x.grad(&grads).unwrap();
            B::sync(device).unwrap();
            dx
        })
    });
}

/// Every variant on inner backend `B`; `native_backward` where `B` has one for the mode. Shapes
/// whose output tensor exceeds `max_tensor_bytes` are skipped with a printed note.
fn bench_backend<B: Backend>(
    c: &mut Criterion,
    backend: &str,
    device: &B::Device,
    native_backward: bool,
    max_tensor_bytes: Option<usize>,
) {
    let mut group = c.benchmark_group(backend);
    // BENCH_QUICK=1 (scripts/gpu-bench.sh): shorter runs, to fit a 10-minute GPU run.
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(if quick { 3 } else { 10 }))
        .warm_up_time(Duration::from_secs(if quick { 1 } else { 2 }));
    for shape in shapes() {
        let [n, c, _, _] = shape.input;
        let output_bytes = n * c * shape.output[0] * shape.output[1] * 4;
        if max_tensor_bytes.is_some_and(|limit| output_bytes > limit) {
            println!(
                "{backend}/{}: skipped, its {} MB output exceeds this device's buffer limit",
                shape.name,
                output_bytes >> 20
            );
            continue;
        }
        forward::<B>(&mut group, "native", &shape, device, native::<B>);
        if !matches!(shape.mode, InterpolateMode::Lanczos3) {
            forward::<B>(&mut group, "gather", &shape, device, gather_resize::<B>);
            forward_backward::<Autodiff<B>>(
                &mut group,
                "gather",
                &shape,
                device,
                gather_resize::<Autodiff<B>>,
            );
        }
        if native_backward {
            forward_backward::<Autodiff<B>>(
                &mut group,
                "native",
                &shape,
                device,
                native::<Autodiff<B>>,
            );
        }
        for (label, layout) in [
            ("decorator_dense", WeightLayout::Dense),
            ("decorator_banded", WeightLayout::Banded),
        ] {
            configured(always(layout), || {
                forward::<DeterministicBackend<B>>(
                    &mut group,
                    label,
                    &shape,
                    device,
                    native::<DeterministicBackend<B>>,
                );
                forward_backward::<Autodiff<DeterministicBackend<B>>>(
                    &mut group,
                    label,
                    &shape,
                    device,
                    native::<Autodiff<DeterministicBackend<B>>>,
                );
            });
        }
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    #[cfg(feature = "ndarray")]
    bench_backend::<burn::backend::NdArray>(
        c,
        "ndarray",
        &burn::backend::ndarray::NdArrayDevice::Cpu,
        false,
        None,
    );
    #[cfg(feature = "flex")]
    bench_backend::<burn::backend::Flex>(c, "flex", &burn::backend::flex::FlexDevice, true, None);
    // Software Vulkan (llvmpipe): runs the real CubeCL kernels, so this checks that every
    // variant works on the accelerator path; its timings say nothing about a GPU. llvmpipe
    // refuses buffers much over 100 MB (allocation panics on the device thread): shape (c)'s
    // 210 MB output is skipped.
    #[cfg(feature = "wgpu")]
    if let Some(device) = burn_deterministic_suite::wgpu_setup::vulkan_device() {
        let limit = Some(100 << 20);
        bench_backend::<burn::backend::Wgpu>(c, "wgpu_functional_only", &device, false, limit);
    }
    // Burn 0.21's CUDA backend has no bilinear/bicubic backward: no native fwd+bwd.
    #[cfg(feature = "cuda")]
    bench_backend::<burn::backend::Cuda>(c, "cuda", &Default::default(), false, None);
}

criterion_group!(shapes_group, benches);
criterion_main!(shapes_group);
