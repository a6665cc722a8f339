//! The two example nets on Burn 0.22.1, layer for layer the Burn 0.21 ones
//! (`crate::models`): a semantic-segmentation net (main logits at 1/4, auxiliary logits at 1/8)
//! and a depth net (encoder + FPN decoder), upsampling bilinearly in the model and in the loss.
//!
//! Burn 0.22 has no backend to decorate, so the models call the crate's functions where Burn's
//! own would not train or would drift: `burn_deterministic_tensor::interpolate` and its
//! `Interpolate2d` for every resize (Burn's bilinear backward panics on flex and wgpu), and
//! `fixed_order::{gather, mean, sum}` in the losses (on CubeCL, Burn's gather backward and full
//! reductions meet partial sums in float atomics).

// Burn's derives name `burn::…`: here that is Burn 0.22.1.
use burn022 as burn;
use burn022::config::Config;
use burn022::module::Module;
use burn022::nn::conv::{Conv2d, Conv2dConfig};
use burn022::nn::interpolate::InterpolateMode;
use burn022::nn::{Dropout, DropoutConfig, PaddingConfig2d};
use burn022::tensor::activation::{log_softmax, relu, softplus};
use burn022::tensor::ops::{InterpolateMode as OpsMode, InterpolateOptions};
use burn022::tensor::{Device, Int, Tensor};
use burn_deterministic_tensor::{fixed_order, interpolate, Interpolate2d, Interpolate2dConfig};

/// 3×3 convolution + ReLU.
#[derive(Module, Debug)]
pub struct ConvBlock {
    conv: Conv2d,
}

impl ConvBlock {
    pub fn new(channels: [usize; 2], stride: usize, device: &Device) -> Self {
        let conv = Conv2dConfig::new(channels, [3, 3])
            .with_stride([stride, stride])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init(device);
        Self { conv }
    }

    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        relu(self.conv.forward(x))
    }
}

fn bilinear(size: [usize; 2], align_corners: bool) -> InterpolateOptions {
    InterpolateOptions::new(OpsMode::Bilinear)
        .with_align_corners(align_corners)
        .with_output_size(size)
}

#[derive(Config, Debug)]
pub struct SegmentationConfig {
    #[config(default = 19)]
    pub classes: usize,
    #[config(default = 0.4)]
    pub aux_weight: f64,
    /// Dropout probability on the fused features before the main head (0: none, the default).
    /// Dropout draws from the device's generator during training.
    #[config(default = 0.0)]
    pub dropout: f64,
}

/// Encoder of stride 8; the main head fuses 1/4 features with upsampled 1/8 features, the
/// auxiliary head reads the 1/8 features.
#[derive(Module, Debug)]
pub struct SegmentationNet {
    stem: ConvBlock,
    down2: ConvBlock,
    down3: ConvBlock,
    fuse: ConvBlock,
    dropout: Dropout,
    main_head: Conv2d,
    aux_head: Conv2d,
    /// Weight of the auxiliary loss term (a constant of the model, not a parameter).
    pub aux_weight: f64,
    /// Number of classes.
    pub classes: usize,
}

/// Main logits at 1/4 and auxiliary logits at 1/8 of the input size.
pub struct SegmentationOutput {
    pub main: Tensor<4>,
    pub aux: Tensor<4>,
}

impl SegmentationConfig {
    pub fn init(&self, device: &Device) -> SegmentationNet {
        SegmentationNet {
            stem: ConvBlock::new([3, 16], 2, device),
            down2: ConvBlock::new([16, 32], 2, device),
            down3: ConvBlock::new([32, 64], 2, device),
            fuse: ConvBlock::new([96, 32], 1, device),
            dropout: DropoutConfig::new(self.dropout).init(),
            main_head: Conv2dConfig::new([32, self.classes], [1, 1]).init(device),
            aux_head: Conv2dConfig::new([64, self.classes], [1, 1]).init(device),
            aux_weight: self.aux_weight,
            classes: self.classes,
        }
    }
}

impl SegmentationNet {
    pub fn forward(&self, images: Tensor<4>) -> SegmentationOutput {
        let quarter = self.down2.forward(self.stem.forward(images));
        let eighth = self.down3.forward(quarter.clone());
        let [_, _, h, w] = quarter.dims();
        let up = interpolate(eighth.clone(), bilinear([h, w], false));
        let fused = self.fuse.forward(Tensor::cat(vec![quarter, up], 1));
        SegmentationOutput {
            main: self.main_head.forward(self.dropout.forward(fused)),
            aux: self.aux_head.forward(eighth),
        }
    }
}

/// Mean cross-entropy of `logits: [N, C, H, W]` against `targets: [N, H, W]`.
pub fn cross_entropy(logits: Tensor<4>, targets: Tensor<3, Int>) -> Tensor<1> {
    let picked = fixed_order::gather(log_softmax(logits, 1), 1, targets.unsqueeze_dim(1));
    fixed_order::mean(picked).neg()
}

/// Both logits upsampled to the mask size (bilinear, align_corners = false), cross-entropy,
/// auxiliary term weighted by `aux_weight`.
pub fn segmentation_loss(
    output: &SegmentationOutput,
    masks: Tensor<3, Int>,
    aux_weight: f64,
) -> Tensor<1> {
    let [_, h, w] = masks.dims();
    let main = interpolate(output.main.clone(), bilinear([h, w], false));
    let aux = interpolate(output.aux.clone(), bilinear([h, w], false));
    cross_entropy(main, masks.clone()) + cross_entropy(aux, masks).mul_scalar(aux_weight)
}

/// Per-pixel class ids at the mask size.
pub fn predict_classes(output: &SegmentationOutput, size: [usize; 2]) -> Tensor<3, Int> {
    interpolate(output.main.clone(), bilinear(size, false))
        .argmax(1)
        .squeeze_dim(1)
}

/// Encoder (strides 2, 4, 8) and an FPN decoder whose top-down path upsamples with
/// `scale_factor = 2`, bilinear, `align_corners = true`; depth comes out at 1/2 resolution.
#[derive(Module, Debug)]
pub struct DepthNet {
    enc1: ConvBlock,
    enc2: ConvBlock,
    enc3: ConvBlock,
    lat1: Conv2d,
    lat2: Conv2d,
    lat3: Conv2d,
    up: Interpolate2d,
    smooth: ConvBlock,
    head: Conv2d,
}

impl DepthNet {
    pub fn new(device: &Device) -> Self {
        let lateral = |c| Conv2dConfig::new([c, 32], [1, 1]).init(device);
        Self {
            enc1: ConvBlock::new([3, 16], 2, device),
            enc2: ConvBlock::new([16, 32], 2, device),
            enc3: ConvBlock::new([32, 64], 2, device),
            lat1: lateral(16),
            lat2: lateral(32),
            lat3: lateral(64),
            up: Interpolate2dConfig::new()
                .with_scale_factor(Some([2.0, 2.0]))
                .with_mode(InterpolateMode::Linear)
                .with_align_corners(true)
                .init(),
            smooth: ConvBlock::new([32, 32], 1, device),
            head: Conv2dConfig::new([32, 1], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
        }
    }

    /// Positive depth `[N, 1, H/2, W/2]`. `H` and `W` must be multiples of 8.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<4> {
        let [_, _, h, w] = images.dims();
        assert!(
            h % 8 == 0 && w % 8 == 0,
            "DepthNet needs a size divisible by 8, got {h}x{w}"
        );
        let c1 = self.enc1.forward(images);
        let c2 = self.enc2.forward(c1.clone());
        let c3 = self.enc3.forward(c2.clone());
        let p3 = self.lat3.forward(c3);
        let p2 = self.lat2.forward(c2) + self.up.forward(p3);
        let p1 = self.lat1.forward(c1) + self.up.forward(p2);
        softplus(self.head.forward(self.smooth.forward(p1)), 1.0) + 1e-3
    }
}

/// Scale-invariant log loss (Eigen et al., λ = 0.5) over valid pixels (`truth > 0`), after
/// upsampling the prediction to the ground-truth size (bilinear, align_corners = true).
pub fn depth_loss(predicted: Tensor<4>, truth: Tensor<4>) -> Tensor<1> {
    let [_, _, h, w] = truth.dims();
    let predicted = interpolate(predicted, bilinear([h, w], true));
    let valid = truth.clone().greater_elem(0.0).float();
    let d = (predicted.log() - truth.clamp_min(1e-3).log()) * valid.clone();
    let count = fixed_order::sum(valid).clamp_min(1.0);
    let mean_sq = fixed_order::sum(d.clone().powf_scalar(2.0)) / count.clone();
    let mean = fixed_order::sum(d) / count;
    mean_sq - mean.powf_scalar(2.0).mul_scalar(0.5)
}

/// The prediction at the ground-truth size.
pub fn predict_depth(predicted: Tensor<4>, size: [usize; 2]) -> Tensor<4> {
    interpolate(predicted, bilinear(size, true))
}
