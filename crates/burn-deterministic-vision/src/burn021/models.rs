//! A small semantic-segmentation net (main logits at 1/4, auxiliary logits at 1/8) and a small
//! depth net (encoder + FPN decoder). Both upsample bilinearly, in the model and in the loss,
//! exactly where real models do; neither knows which backend runs it.

use burn::config::Config;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::interpolate::{Interpolate2d, Interpolate2dConfig, InterpolateMode};
use burn::nn::{Dropout, DropoutConfig, PaddingConfig2d};
use burn::tensor::activation::{log_softmax, relu, softplus};
use burn::tensor::backend::Backend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode as OpsMode, InterpolateOptions};
use burn::tensor::{Int, Tensor};

/// 3×3 convolution + ReLU.
#[derive(Module, Debug)]
pub struct ConvBlock<B: Backend> {
    conv: Conv2d<B>,
}

impl<B: Backend> ConvBlock<B> {
    pub fn new(channels: [usize; 2], stride: usize, device: &B::Device) -> Self {
        let conv = Conv2dConfig::new(channels, [3, 3])
            .with_stride([stride, stride])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init(device);
        Self { conv }
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        relu(self.conv.forward(x))
    }
}

fn bilinear(align_corners: bool) -> InterpolateOptions {
    InterpolateOptions::new(OpsMode::Bilinear).with_align_corners(align_corners)
}

/// Mean over every element, as a rank-1 tensor: reductions one dim at a time (a full `sum()`
/// on CubeCL uses float atomics and is not bit-reproducible).
fn mean_all<B: Backend>(t: Tensor<B, 4>) -> Tensor<B, 1> {
    t.mean_dim(3)
        .mean_dim(2)
        .mean_dim(1)
        .mean_dim(0)
        .reshape([1])
}

fn sum_all<B: Backend>(t: Tensor<B, 4>) -> Tensor<B, 1> {
    t.sum_dim(3).sum_dim(2).sum_dim(1).sum_dim(0).reshape([1])
}

#[derive(Config, Debug)]
pub struct SegmentationConfig {
    #[config(default = 19)]
    pub classes: usize,
    #[config(default = 0.4)]
    pub aux_weight: f64,
    /// Dropout probability on the fused features before the main head (0: none, the default).
    /// Dropout draws from the backend's generator during training.
    #[config(default = 0.0)]
    pub dropout: f64,
}

/// Encoder of stride 8; the main head fuses 1/4 features with upsampled 1/8 features, the
/// auxiliary head reads the 1/8 features.
#[derive(Module, Debug)]
pub struct SegmentationNet<B: Backend> {
    stem: ConvBlock<B>,
    down2: ConvBlock<B>,
    down3: ConvBlock<B>,
    fuse: ConvBlock<B>,
    dropout: Dropout,
    main_head: Conv2d<B>,
    aux_head: Conv2d<B>,
    /// Weight of the auxiliary loss term (a constant of the model, not a parameter).
    pub aux_weight: f64,
    /// Number of classes.
    pub classes: usize,
}

/// Main logits at 1/4 and auxiliary logits at 1/8 of the input size.
pub struct SegmentationOutput<B: Backend> {
    pub main: Tensor<B, 4>,
    pub aux: Tensor<B, 4>,
}

impl SegmentationConfig {
    pub fn init<B: Backend>(&self, device: &B::Device) -> SegmentationNet<B> {
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

impl<B: Backend> SegmentationNet<B> {
    pub fn forward(&self, images: Tensor<B, 4>) -> SegmentationOutput<B> {
        let quarter = self.down2.forward(self.stem.forward(images));
        let eighth = self.down3.forward(quarter.clone());
        let [_, _, h, w] = quarter.dims();
        let up = interpolate(eighth.clone(), [h, w], bilinear(false));
        let fused = self.fuse.forward(Tensor::cat(vec![quarter, up], 1));
        SegmentationOutput {
            main: self.main_head.forward(self.dropout.forward(fused)),
            aux: self.aux_head.forward(eighth),
        }
    }
}

/// Mean cross-entropy of `logits: [N, C, H, W]` against `targets: [N, H, W]`.
pub fn cross_entropy<B: Backend>(logits: Tensor<B, 4>, targets: Tensor<B, 3, Int>) -> Tensor<B, 1> {
    let picked = log_softmax(logits, 1).gather(1, targets.unsqueeze_dim(1));
    mean_all(picked).neg()
}

/// Both logits upsampled to the mask size (bilinear, align_corners = false), cross-entropy,
/// auxiliary term weighted by `aux_weight`.
pub fn segmentation_loss<B: Backend>(
    output: &SegmentationOutput<B>,
    masks: Tensor<B, 3, Int>,
    aux_weight: f64,
) -> Tensor<B, 1> {
    let [_, h, w] = masks.dims();
    let main = interpolate(output.main.clone(), [h, w], bilinear(false));
    let aux = interpolate(output.aux.clone(), [h, w], bilinear(false));
    cross_entropy(main, masks.clone()) + cross_entropy(aux, masks).mul_scalar(aux_weight)
}

/// Per-pixel class ids at the mask size.
pub fn predict_classes<B: Backend>(
    output: &SegmentationOutput<B>,
    size: [usize; 2],
) -> Tensor<B, 3, Int> {
    interpolate(output.main.clone(), size, bilinear(false))
        .argmax(1)
        .squeeze_dim(1)
}

/// Encoder (strides 2, 4, 8) and an FPN decoder whose top-down path upsamples with
/// `scale_factor = 2`, bilinear, `align_corners = true`; depth comes out at 1/2 resolution.
#[derive(Module, Debug)]
pub struct DepthNet<B: Backend> {
    enc1: ConvBlock<B>,
    enc2: ConvBlock<B>,
    enc3: ConvBlock<B>,
    lat1: Conv2d<B>,
    lat2: Conv2d<B>,
    lat3: Conv2d<B>,
    up: Interpolate2d,
    smooth: ConvBlock<B>,
    head: Conv2d<B>,
}

impl<B: Backend> DepthNet<B> {
    pub fn new(device: &B::Device) -> Self {
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
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
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
pub fn depth_loss<B: Backend>(predicted: Tensor<B, 4>, truth: Tensor<B, 4>) -> Tensor<B, 1> {
    let [_, _, h, w] = truth.dims();
    let predicted = interpolate(predicted, [h, w], bilinear(true));
    let valid = truth.clone().greater_elem(0.0).float();
    let d = (predicted.log() - truth.clamp_min(1e-3).log()) * valid.clone();
    let count = sum_all(valid).clamp_min(1.0);
    let mean_sq = sum_all(d.clone().powf_scalar(2.0)) / count.clone();
    let mean = sum_all(d) / count;
    mean_sq - mean.powf_scalar(2.0).mul_scalar(0.5)
}

/// The prediction at the ground-truth size.
pub fn predict_depth<B: Backend>(predicted: Tensor<B, 4>, size: [usize; 2]) -> Tensor<B, 4> {
    interpolate(predicted, size, bilinear(true))
}
