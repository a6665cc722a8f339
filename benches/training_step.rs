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
//! - `report_bookkeeping`: what the determinism report's counting costs per decorated step
//!   (`policy: always`, the most rewrites): as many counted rewrites as that step records. The
//!   ratio against `decorator_always` is the report's share of a step.
//!
//! ndarray has no bilinear backward (and a very slow conv2d backward), so only Flex runs here.
//!
//! `cargo bench --bench training_step --features flex`

use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{Adam, AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor};
use burn_deterministic::report::{record_for_benchmark, report};
use burn_deterministic::{DeterministicConfig, ModeSet, RewritePolicy};
use burn_deterministic_suite::harness::configured;
use burn_deterministic_vision::data::SyntheticSegmentation;
use burn_deterministic_vision::models::{segmentation_loss, SegmentationConfig, SegmentationNet};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

/// One optimizer step on one fixed batch, repeatable.
struct Step<B: AutodiffBackend> {
    model: Option<SegmentationNet<B>>,
    optimizer: OptimizerAdaptor<Adam, SegmentationNet<B>, B>,
    images: Tensor<B, 4>,
    masks: Tensor<B, 3, Int>,
    aux_weight: f64,
    device: B::Device,
}

impl<B: AutodiffBackend> Step<B> {
    fn new(device: &B::Device) -> Self {
        B::seed(device, 1);
        let config = SegmentationConfig::new();
        let data = SyntheticSegmentation::new(5, [128, 128], config.classes, 4);
        let (images, masks) = data.batch::<B>(&[0, 1, 2, 3], device);
        Self {
            model: Some(config.init::<B>(device)),
            optimizer: AdamConfig::new().init(),
            images,
            masks,
            aux_weight: config.aux_weight,
            device: device.clone(),
        }
    }

    fn run(&mut self) {
        let current = self.model.take().unwrap();
        let output = current.forward(self.images.clone());
        let loss = segmentation_loss(&output, self.masks.clone(), self.aux_weight);
        let grads = GradientsParams::from_grads(loss.backward(), &current);
        let next = self.optimizer.step(1e-3, current, grads);
        B::sync(&self.device).unwrap();
        self.model = Some(next);
    }
}

/// Every count in the determinism report, summed.
fn counted_rewrites() -> u64 {
    report()
        .devices
        .iter()
        .flat_map(|device| device.rewrites.iter().chain(&device.left_to_backend))
        .map(|(_, count)| count)
        .sum()
}

/// Benchmarks repeated optimizer steps on one fixed batch.
fn bench_step<B: AutodiffBackend>(c: &mut Criterion, id: &str, device: &B::Device) {
    let mut step = Step::<B>::new(device);
    c.bench_function(id, |b| b.iter(|| step.run()));
    // The model stays usable: the step really ran.
    let _ = step.model.unwrap().valid();
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
        configured(always.clone(), || {
            bench_step::<Autodiff<DeterministicBackend<Flex>>>(
                c,
                "flex/seg_train_step/step/decorator_always",
                &device,
            )
        });
        // The report's counting, as many times as one such step counts.
        let per_step = configured(always, || {
            let mut step = Step::<Autodiff<DeterministicBackend<Flex>>>::new(&device);
            step.run();
            let before = counted_rewrites();
            step.run();
            counted_rewrites() - before
        });
        assert!(per_step > 0, "a decorated step counts its rewrites");
        eprintln!("report: {per_step} counted rewrites per decorated step");
        c.bench_function("flex/seg_train_step/step/report_bookkeeping", |b| {
            b.iter(|| {
                for _ in 0..per_step {
                    record_for_benchmark::<Flex>(&device);
                }
            })
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
