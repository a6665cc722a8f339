//! A user's program on Burn 0.22.1, outside the repository's workspace: only `burn` (flex) and
//! `burn-deterministic-tensor` (feature `train`), built with `panic = "abort"`.
//!
//! A burn-train `Learner` trains a small upsampling model data-parallel on two flex devices with
//! `FixedOrderDataParallel`, its loader wrapped in `ResumableLoader`, its progress printed by
//! `PlainProgress`, its optimizer steps recorded for the check by `optimize_traced`; the
//! parameter hash is printed for the check. With `--check-determinism` the program runs itself
//! twice more in new processes (`check_determinism`) and exits 1 unless both print the same
//! parameter hash.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{activation, Device, Tensor, TensorData};
use burn::train::metric::LossMetric;
use burn::train::{
    InferenceStep, Learner, RegressionOutput, SupervisedTraining, TrainOutput, TrainStep,
    TrainingStrategy,
};
use burn_deterministic_tensor::train::{
    check_determinism, optimize_traced, print_parameter_hash, FixedOrderDataParallel,
    PlainProgress, ResumableLoader,
};
use burn_deterministic_tensor::{fixed_order, interpolate};
use std::process::ExitCode;
use std::sync::Arc;

const SIDE: usize = 16;
const SEED: u64 = 5;

/// A half-resolution prediction upsampled bilinearly to the input size.
#[derive(Module, Debug)]
pub struct Upsampler {
    encoder: Conv2d,
    head: Conv2d,
}

impl Upsampler {
    fn new(device: &Device) -> Self {
        Self {
            encoder: Conv2dConfig::new([3, 8], [3, 3])
                .with_stride([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            head: Conv2dConfig::new([8, 1], [1, 1]).init(device),
        }
    }

    fn regress(&self, batch: Batch) -> RegressionOutput {
        let coarse = self
            .head
            .forward(activation::relu(self.encoder.forward(batch.images)));
        let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([SIDE, SIDE]);
        let output = interpolate(coarse, options).flatten::<2>(1, 3);
        let error = output.clone() - batch.targets.clone();
        RegressionOutput {
            loss: fixed_order::mean(error.clone() * error),
            output,
            targets: batch.targets,
        }
    }
}

impl TrainStep for Upsampler {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> TrainOutput<RegressionOutput> {
        let output = self.regress(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }

    fn optimize(
        self,
        optim: &mut ModuleOptimizer,
        lr: ModuleLearningRate,
        grads: GradientsParams,
    ) -> Self {
        optimize_traced(self, optim, lr, grads)
    }
}

impl InferenceStep for Upsampler {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> RegressionOutput {
        self.regress(batch)
    }
}

/// An image and its target: a smooth function of the image.
#[derive(Debug, Clone)]
pub struct Sample {
    image: Vec<f32>,
    target: Vec<f32>,
}

/// `count` samples from `seed` (xorshift; no other dependency).
fn samples(seed: u64, count: usize) -> Vec<Sample> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..count)
        .map(|_| {
            let image: Vec<f32> = (0..3 * SIDE * SIDE).map(|_| next()).collect();
            let target = (0..SIDE * SIDE)
                .map(|i| (image[i] + image[SIDE * SIDE + i] - image[2 * SIDE * SIDE + i]).tanh())
                .collect();
            Sample { image, target }
        })
        .collect()
}

#[derive(Debug, Clone)]
pub struct Batch {
    images: Tensor<4>,
    targets: Tensor<2>,
}

#[derive(Clone)]
struct Samples;

impl Batcher<Sample, Batch> for Samples {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> Batch {
        let n = items.len();
        let images = items.iter().flat_map(|s| s.image.iter().copied()).collect();
        let targets = items
            .iter()
            .flat_map(|s| s.target.iter().copied())
            .collect();
        Batch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, SIDE, SIDE]), device),
            targets: Tensor::from_data(TensorData::new(targets, [n, SIDE * SIDE]), device),
        }
    }
}

/// Trains three epochs on two flex devices (two worker threads on the CPU), prints the
/// parameter hash and the library's report; fails unless the validation loss fell.
fn train_on_two_flex_devices() -> Result<(), String> {
    let device = Device::flex().autodiff();
    let devices = vec![device.clone(); 2];
    device.seed(SEED);
    let model = Upsampler::new(&device);
    let valid = samples(SEED + 1, 16);
    // Validation without autodiff, as burn-train's: the model's `valid()` copy, a plain batch.
    let loss_of = |model: &Upsampler| -> f32 {
        let batch = Samples.batch(valid.clone(), &device.clone().inner());
        model.regress(batch).loss.into_scalar()
    };
    let before = loss_of(&model.clone().valid());

    let train_loader = DataLoaderBuilder::new(Samples)
        .batch_size(4)
        .shuffle(SEED)
        .set_device(device.clone())
        .build(InMemDataset::new(samples(SEED, 64)));
    let train_loader = ResumableLoader::new(train_loader)
        .seed_device_each_epoch(&device, SEED)
        .into_loader();
    let valid_loader = DataLoaderBuilder::new(Samples)
        .batch_size(4)
        .set_device(device.clone().inner())
        .build(InMemDataset::new(valid.clone()));
    let directory = std::env::temp_dir().join(format!("user-crate-022-{}", std::process::id()));
    let training = SupervisedTraining::new(&directory, train_loader, valid_loader)
        .metric_train_numeric(LossMetric::new())
        .metric_valid_numeric(LossMetric::new())
        .with_training_strategy(TrainingStrategy::Custom(Arc::new(
            FixedOrderDataParallel::new(devices),
        )))
        .num_epochs(3)
        .renderer(Box::new(PlainProgress::new()));
    let result = training.launch(Learner::new(model, AdamConfig::new().init(), 1e-2));
    let _ = std::fs::remove_dir_all(&directory);

    let after = loss_of(&result.model);
    println!("flex, 2 devices: validation loss {before:.5} -> {after:.5}");
    println!("{}", burn_deterministic_tensor::report::report());
    print_parameter_hash(&result.model);
    if !after.is_finite() || after >= 0.5 * before {
        return Err(format!(
            "the validation loss did not fall to half: {before} -> {after}"
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    const {
        assert!(
            cfg!(panic = "abort"),
            "this check needs a build with panic = \"abort\""
        )
    };
    if let Some(code) = check_determinism("--check-determinism", 2) {
        return code;
    }
    match train_on_two_flex_devices() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
