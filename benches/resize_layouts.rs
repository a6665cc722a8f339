//! Dense vs banded weight layout, policy `always`, on a CPU inner backend (where the rewritten
//! forward is opt-in): a 4× bilinear upsample of segmentation logits,
//! `[8, 19, 128, 128] → [512, 512]`, against the inner backend's native forward in the same run.
//!
//! `cargo bench --bench resize_layouts [--features flex]`
//!
//! With glibc's default allocator every 160 MB output is a fresh `mmap` whose page faults cost
//! more than either layout's arithmetic on a small VM. To measure the layouts without that
//! (as under a caching allocator), let glibc keep and reuse freed memory:
//! `GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 cargo bench --bench resize_layouts`.

use burn::tensor::backend::Backend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Tensor};
use burn_deterministic::{
    DeterministicBackend, DeterministicConfig, ModeSet, RewritePolicy, WeightLayout,
};
use burn_deterministic_suite::harness::{configured, tensor, uniform};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

const SHAPE: [usize; 4] = [8, 19, 128, 128];
const OUTPUT: [usize; 2] = [512, 512];

fn options() -> InterpolateOptions {
    InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false)
}

fn layout(layout: WeightLayout) -> DeterministicConfig {
    DeterministicConfig::default()
        .with_policy(RewritePolicy::Always)
        .with_modes(ModeSet::all())
        .with_layout(layout)
}

fn bench_backend<B: Backend>(c: &mut Criterion, name: &str, device: &B::Device) {
    let values = uniform(1, SHAPE.iter().product());
    let native: Tensor<B, 4> = tensor(&values, SHAPE, DType::F32, device);
    let decorated: Tensor<DeterministicBackend<B>, 4> = tensor(&values, SHAPE, DType::F32, device);
    let mut group = c.benchmark_group(format!("seg_logits_4x_bilinear/{name}"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.bench_function("native", |b| {
        b.iter(|| {
            let y = interpolate(native.clone(), OUTPUT, options());
            B::sync(device).unwrap();
            y
        })
    });
    for (label, config) in [
        ("dense", layout(WeightLayout::Dense)),
        ("banded", layout(WeightLayout::Banded)),
    ] {
        group.bench_function(label, |b| {
            configured(config.clone(), || {
                b.iter(|| {
                    let y = interpolate(decorated.clone(), OUTPUT, options());
                    B::sync(device).unwrap();
                    y
                })
            })
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    #[cfg(feature = "ndarray")]
    bench_backend::<burn::backend::NdArray>(
        c,
        "ndarray",
        &burn::backend::ndarray::NdArrayDevice::Cpu,
    );
    #[cfg(feature = "flex")]
    bench_backend::<burn::backend::Flex>(c, "flex", &burn::backend::flex::FlexDevice);
}

criterion_group!(layouts, benches);
criterion_main!(layouts);
