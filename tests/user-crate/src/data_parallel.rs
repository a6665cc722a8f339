//! burn-train's `Learner`, data-parallel on two flex devices with the library's
//! `FixedOrderDataParallel`: a small model whose prediction is a bilinear upsample, trained for
//! three epochs on seeded synthetic data.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::module::{AutodiffModule, Module};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::optim::AdamConfig;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{activation, Tensor, TensorData};
use burn::train::metric::LossMetric;
use burn::train::{
    InferenceStep, Learner, RegressionOutput, SupervisedTraining, TrainOutput, TrainStep,
    TrainingStrategy,
};
use burn_deterministic::train::{
    print_parameter_hash, FixedOrderDataParallel, PlainProgress, ResumableLoader,
};
use burn_deterministic::DeterministicBackend;
use std::sync::Arc;

type Train = Autodiff<DeterministicBackend<Flex>>;

const SIDE: usize = 16;
const SEED: u64 = 5;

/// A half-resolution prediction upsampled bilinearly to the input size.
#[derive(Module, Debug)]
pub struct Upsampler<B: Backend> {
    encoder: Conv2d<B>,
    head: Conv2d<B>,
}

impl<B: Backend> Upsampler<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            encoder: Conv2dConfig::new([3, 8], [3, 3])
                .with_stride([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            head: Conv2dConfig::new([8, 1], [1, 1]).init(device),
        }
    }

    fn regress(&self, batch: Batch<B>) -> RegressionOutput<B> {
        let coarse = self
            .head
            .forward(activation::relu(self.encoder.forward(batch.images)));
        let options = InterpolateOptions::new(InterpolateMode::Bilinear);
        let output = interpolate(coarse, [SIDE, SIDE], options).flatten::<2>(1, 3);
        let error = output.clone() - batch.targets.clone();
        RegressionOutput {
            loss: (error.clone() * error).mean(),
            output,
            targets: batch.targets,
        }
    }
}

impl<B: AutodiffBackend> TrainStep for Upsampler<B> {
    type Input = Batch<B>;
    type Output = RegressionOutput<B>;

    fn step(&self, batch: Batch<B>) -> TrainOutput<RegressionOutput<B>> {
        let output = self.regress(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl<B: Backend> InferenceStep for Upsampler<B> {
    type Input = Batch<B>;
    type Output = RegressionOutput<B>;

    fn step(&self, batch: Batch<B>) -> RegressionOutput<B> {
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
pub struct Batch<B: Backend> {
    images: Tensor<B, 4>,
    targets: Tensor<B, 2>,
}

#[derive(Clone)]
struct Samples;

impl<B: Backend> Batcher<B, Sample, Batch<B>> for Samples {
    fn batch(&self, items: Vec<Sample>, device: &B::Device) -> Batch<B> {
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
/// parameter hash and the decorator's report; fails unless the validation loss fell.
pub fn train_on_two_flex_devices() -> Result<(), String> {
    let device = FlexDevice;
    let devices = vec![device; 2];
    <Train as Backend>::seed(&device, SEED);
    let model = Upsampler::<Train>::new(&device);
    let valid = samples(SEED + 1, 16);
    let loss_of = |model: &Upsampler<DeterministicBackend<Flex>>| -> f32 {
        let batch = Samples.batch(valid.clone(), &device);
        model.regress(batch).loss.into_scalar()
    };
    let before = loss_of(&model.valid());

    let train_loader = DataLoaderBuilder::new(Samples)
        .batch_size(4)
        .shuffle(SEED)
        .build(InMemDataset::new(samples(SEED, 64)));
    let train_loader = ResumableLoader::new(train_loader)
        .seed_backend_each_epoch(&device, SEED)
        .into_loader();
    let valid_loader = DataLoaderBuilder::new(Samples)
        .batch_size(4)
        .build(InMemDataset::new(valid.clone()));
    let directory = std::env::temp_dir().join(format!("user-crate-{}", std::process::id()));
    let training = SupervisedTraining::new(&directory, train_loader, valid_loader)
        .metric_train_numeric(LossMetric::new())
        .metric_valid_numeric(LossMetric::new())
        .with_training_strategy(TrainingStrategy::Custom(Arc::new(
            FixedOrderDataParallel::new(devices),
        )))
        .num_epochs(3)
        .renderer(PlainProgress::new());
    let result = training.launch(Learner::new(model, AdamConfig::new().init(), 1e-2));
    let _ = std::fs::remove_dir_all(&directory);

    let after = loss_of(&result.model);
    println!("flex, 2 devices: validation loss {before:.5} -> {after:.5}");
    println!("{}", burn_deterministic::report::report());
    print_parameter_hash(&result.model);
    if !after.is_finite() || after >= 0.5 * before {
        return Err(format!(
            "the validation loss did not fall to half: {before} -> {after}"
        ));
    }
    Ok(())
}
