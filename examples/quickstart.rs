//! Quickstart: a small convolutional model with a bilinear upsample trains through
//! `Autodiff<DeterministicBackend<B>>`, twice from the same seed, and the two runs are compared
//! bit for bit. On a plain Burn 0.21 backend the same model panics in its backward pass
//! ("bilinear interpolation backward is not supported").
//!
//! ```text
//! cargo run --release --example quickstart                    # ndarray (CPU)
//! cargo run --release --example quickstart --features wgpu    # ndarray, then wgpu (Vulkan)
//! ```

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{activation, DType, ElementConversion, Tensor};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::harness::{tensor, uniform};
use burn_deterministic_suite::metrics::parameter_hash;

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
const SHAPE: [usize; 4] = [4, 3, 32, 32];

/// Trains `STEPS` Adam steps from `SEED`; returns (first loss, last loss, parameter hash).
fn train<B: AutodiffBackend>(device: &B::Device) -> (f32, f32, String) {
    B::seed(device, SEED);
    let mut model = UpsampleNet::<B>::new(device);
    let mut optimizer = AdamConfig::new().init();
    let images: Tensor<B, 4> = tensor(
        &uniform(SEED, SHAPE.iter().product()),
        SHAPE,
        DType::F32,
        device,
    );
    // Target: a smooth function of the image, so the model can learn it.
    let target = images.clone().mean_dim(1).tanh();
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let prediction = model.forward(images.clone());
        let error = prediction - target.clone();
        // A mean over dims, not a full `sum()`: CubeCL computes a full sum with float atomics.
        let loss = (error.clone() * error)
            .mean_dim(3)
            .mean_dim(2)
            .mean_dim(1)
            .mean_dim(0);
        losses.push(loss.clone().into_scalar().elem::<f32>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(1e-2, model, grads);
    }
    (losses[0], losses[STEPS - 1], parameter_hash(&model))
}

/// Trains twice and reports; returns whether both runs were bit-identical and learned.
fn run_twice<B: AutodiffBackend>(label: &str, device: &B::Device) -> bool {
    let (first, last, hash_a) = train::<B>(device);
    let (_, _, hash_b) = train::<B>(device);
    let identical = hash_a == hash_b;
    println!("{label}: loss {first:.5} -> {last:.5} over {STEPS} steps");
    println!("{label}: run 1 parameters sha256 {hash_a}");
    println!("{label}: run 2 parameters sha256 {hash_b}");
    println!("{label}: two runs gave identical bits: {identical}");
    identical && last < first
}

fn main() {
    let mut ok = true;
    #[cfg(feature = "ndarray")]
    {
        type Train = burn::backend::Autodiff<DeterministicBackend<burn::backend::NdArray>>;
        ok &= run_twice::<Train>("ndarray", &burn::backend::ndarray::NdArrayDevice::Cpu);
    }
    #[cfg(feature = "flex")]
    {
        type Train = burn::backend::Autodiff<DeterministicBackend<burn::backend::Flex>>;
        ok &= run_twice::<Train>("flex", &burn::backend::flex::FlexDevice);
    }
    #[cfg(feature = "wgpu")]
    {
        type Train = burn::backend::Autodiff<DeterministicBackend<burn::backend::Wgpu>>;
        match burn_deterministic_suite::wgpu_setup::vulkan_device() {
            Some(device) => ok &= run_twice::<Train>("wgpu", &device),
            None => println!("wgpu: skipped, no Vulkan adapter"),
        }
    }
    if !ok {
        eprintln!("FAILED: runs differed or the loss did not decrease");
        std::process::exit(1);
    }
}
