//! One optimizer step of the segmentation example model (batch 4, 19 classes, 128×128 images:
//! logits at 32×32 and 16×16 upsampled bilinearly to 128×128 in the loss), through the
//! decorator and on the plain backend, measured in the same run.
//!
//! Variants (ids `BACKEND/seg_train_step/step/VARIANT`):
//! - `plain`: `Autodiff<Flex>`, Flex's native bilinear forward and backward (the baseline);
//! - `decorator`: `Autodiff<DeterministicBackend<Flex>>`, default policy (native forward on the
//!   CPU, adjoint-GEMM backward);
//! - `decorator_always`: the same with policy `always` (matmul forward too).
//!
//! ndarray has no bilinear backward (and a very slow conv2d backward), so only Flex runs here.
//!
//! `cargo bench --bench training_step --features flex`

use burn::module::AutodiffModule;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn_deterministic::{DeterministicConfig, ModeSet, RewritePolicy};
use burn_deterministic_suite::harness::configured;
use burn_deterministic_vision::data::SyntheticSegmentation;
use burn_deterministic_vision::models::{segmentation_loss, SegmentationConfig};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

/// Benchmarks repeated optimizer steps on one fixed batch.
fn bench_step<B: AutodiffBackend>(c: &mut Criterion, id: &str, device: &B::Device) {
    B::seed(device, 1);
    let config = SegmentationConfig::new();
    let data = SyntheticSegmentation::new(5, [128, 128], config.classes, 4);
    let (images, masks) = data.batch::<B>(&[0, 1, 2, 3], device);
    let mut model = Some(config.init::<B>(device));
    let mut optimizer = AdamConfig::new().init();
    c.bench_function(id, |b| {
        b.iter(|| {
            let current = model.take().unwrap();
            let output = current.forward(images.clone());
            let loss = segmentation_loss(&output, masks.clone(), config.aux_weight);
            let grads = GradientsParams::from_grads(loss.backward(), &current);
            let next = optimizer.step(1e-3, current, grads);
            B::sync(device).unwrap();
            model = Some(next);
        })
    });
    // The model stays usable: the step really ran.
    let _ = model.unwrap().valid();
}

fn benches(c: &mut Criterion) {
    #[cfg(feature = "flex")]
    {
        use burn::backend::{Autodiff, Flex};
        use burn_deterministic::DeterministicBackend;
        let device = burn::backend::flex::FlexDevice;
        bench_step::<Autodiff<Flex>>(c, "flex/seg_train_step/step/plain", &device);
        bench_step::<Autodiff<DeterministicBackend<Flex>>>(
            c,
            "flex/seg_train_step/step/decorator",
            &device,
        );
        let always = DeterministicConfig::default()
            .with_policy(RewritePolicy::Always)
            .with_modes(ModeSet::all());
        configured(always, || {
            bench_step::<Autodiff<DeterministicBackend<Flex>>>(
                c,
                "flex/seg_train_step/step/decorator_always",
                &device,
            )
        });
    }
    #[cfg(not(feature = "flex"))]
    let _ = c;
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(2))
}

criterion_group! {
    name = step_group;
    config = config();
    targets = benches
}
criterion_main!(step_group);
