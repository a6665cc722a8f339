//! Training through a bilinear upsample on Burn 0.22, deterministic: a small head (a 3×3
//! convolution on an 8×8 feature map, then this crate's `Interpolate2d` to 32×32) fitted with
//! Adam to masks made by a hidden head of the same shape.
//!
//! ```sh
//! cargo run -p burn-deterministic-tensor --example upsample_training            # flex (CPU)
//! cargo run -p burn-deterministic-tensor --example upsample_training -- --wgpu  # wgpu, Vulkan
//! ```
//!
//! With Burn's own `burn::nn::interpolate::Interpolate2d` the backward panics on wgpu ("not
//! supported"); with this crate's it trains, and prints the same parameter hash on every run.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::interpolate::InterpolateMode;
use burn::nn::loss::BinaryCrossEntropyLossConfig;
use burn::nn::PaddingConfig2d;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::{Device, Distribution, Int, Tensor};
use burn_deterministic_tensor::{Interpolate2d, Interpolate2dConfig};
use sha2::{Digest, Sha256};

#[derive(Module, Debug)]
struct SegmentationHead {
    conv: Conv2d,
    upsample: Interpolate2d,
}

impl SegmentationHead {
    fn new(device: &Device) -> Self {
        Self {
            conv: Conv2dConfig::new([4, 2], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device),
            upsample: Interpolate2dConfig::new()
                .with_output_size(Some([32, 32]))
                .with_mode(InterpolateMode::Linear)
                .with_align_corners(false)
                .init(),
        }
    }

    /// `[N, 4, 8, 8]` features → `[N, 2, 32, 32]` logits.
    fn forward(&self, features: Tensor<4>) -> Tensor<4> {
        self.upsample.forward(self.conv.forward(features))
    }
}

fn main() {
    let device = if std::env::args().any(|a| a == "--wgpu") {
        Device::wgpu_options()
            .graphics_api(WgpuBackend::Vulkan)
            .init()
            .unwrap_or_else(|e| panic!("no Vulkan adapter ({e}): install mesa-vulkan-drivers"))
    } else {
        Device::flex()
    };
    let device = device.autodiff();
    device.seed(42);

    // The data: random features, and masks from a hidden head of the same architecture.
    let teacher = SegmentationHead::new(&device);
    let batches: Vec<(Tensor<4>, Tensor<4, Int>)> = (0..8)
        .map(|_| {
            let features =
                Tensor::<4>::random([4, 4, 8, 8], Distribution::Normal(0.0, 1.0), &device);
            let masks = teacher
                .forward(features.clone())
                .detach()
                .greater_elem(0.0)
                .int();
            (features, masks)
        })
        .collect();

    let mut model = SegmentationHead::new(&device);
    let loss_fn = BinaryCrossEntropyLossConfig::new()
        .with_logits(true)
        .init(&device);
    let mut optimizer = AdamConfig::new().init();
    for epoch in 0..30 {
        let mut total = 0.0;
        for (features, masks) in &batches {
            let logits = model.forward(features.clone());
            let loss = loss_fn.forward(logits, masks.clone());
            total += loss.clone().into_scalar::<f32>() as f64;
            let gradients = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(0.05, model, gradients);
        }
        if epoch % 5 == 4 {
            println!(
                "epoch {:>2}: loss {:.4}",
                epoch + 1,
                total / batches.len() as f64
            );
        }
    }
    println!("parameters sha256: {}", parameter_hash(&model));
}

/// The exact bits of every parameter, hashed.
fn parameter_hash(model: &SegmentationHead) -> String {
    let mut hasher = Sha256::new();
    hasher.update(model.conv.weight.val().into_data().as_bytes());
    if let Some(bias) = &model.conv.bias {
        hasher.update(bias.val().into_data().as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
