//! Quickstart: a small convolutional model with a bilinear upsample trains through
//! `Autodiff<DeterministicBackend<B>>`, and `--check-determinism` trains it again in two new
//! processes and compares the parameters bit for bit. On a plain Burn 0.21 backend the same
//! model panics in its backward pass ("bilinear interpolation backward is not supported").
//!
//! Copy it into your project: it uses only `burn` and `burn-deterministic` (feature `train`).
//!
//! ```text
//! cargo run --example quickstart                                   # flex (CPU)
//! cargo run --example quickstart -- --check-determinism            # the same, in 2 processes
//! cargo run --example quickstart --features wgpu -- --wgpu         # wgpu
//! ```

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{activation, Distribution, ElementConversion, Tensor};
use burn_deterministic::train::{check_determinism, print_parameter_hash};
use burn_deterministic::DeterministicBackend;
use std::process::ExitCode;

/// Predicts a full-resolution map from a half-resolution feature map, upsampled bilinearly
/// (align_corners = false, as segmentation heads do).
#[derive(Module, Debug)]
struct UpsampleNet<B: Backend> {
    encoder: Conv2d<B>,
    head: Conv2d<B>,
}

impl<B: Backend> UpsampleNet<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            encoder: Conv2dConfig::new([3, 16], [3, 3])
                .with_stride([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            head: Conv2dConfig::new([16, 1], [1, 1]).init(device),
        }
    }

    fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        let [_, _, height, width] = images.dims();
        let features = activation::relu(self.encoder.forward(images));
        let coarse = self.head.forward(features);
        let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
        interpolate(coarse, [height, width], options)
    }
}

const SEED: u64 = 42;
const STEPS: usize = 30;

/// `STEPS` Adam steps from `SEED`: the trained model and the first and last loss.
fn train<B: AutodiffBackend>(device: &B::Device) -> (UpsampleNet<B>, f32, f32) {
    B::seed(device, SEED);
    let mut model = UpsampleNet::<B>::new(device);
    let mut optimizer = AdamConfig::new().init();
    let images = Tensor::<B, 4>::random([4, 3, 32, 32], Distribution::Default, device);
    // Target: a smooth function of the image, so the model can learn it.
    let target = images.clone().mean_dim(1).tanh();
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let error = model.forward(images.clone()) - target.clone();
        // A full sum: the decorator computes it in a fixed order on every backend (CubeCL's own
        // adds partial sums with float atomics).
        let loss = (error.clone() * error).sum();
        losses.push(loss.clone().into_scalar().elem::<f32>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(1e-3, model, grads);
    }
    (model, losses[0], losses[STEPS - 1])
}

fn run<B: AutodiffBackend>(name: &str, device: &B::Device) -> ExitCode {
    let (model, first, last) = train::<B>(device);
    println!("{name}: loss {first:.4} -> {last:.4} over {STEPS} Adam steps");
    print_parameter_hash(&model);
    if last < first {
        ExitCode::SUCCESS
    } else {
        eprintln!("the loss did not decrease");
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    // With --check-determinism: this program again in two new processes, hashes compared.
    if let Some(exit) = check_determinism("--check-determinism", 2) {
        return exit;
    }
    if std::env::args().any(|arg| arg == "--wgpu") {
        #[cfg(feature = "wgpu")]
        return run::<burn::backend::Autodiff<DeterministicBackend<burn::backend::Wgpu>>>(
            "wgpu",
            &Default::default(),
        );
        #[cfg(not(feature = "wgpu"))]
        {
            eprintln!("--wgpu needs the `wgpu` feature");
            return ExitCode::from(2);
        }
    }
    run::<burn::backend::Autodiff<DeterministicBackend<burn::backend::Flex>>>(
        "flex",
        &Default::default(),
    )
}
