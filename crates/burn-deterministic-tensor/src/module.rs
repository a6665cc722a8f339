//! A drop-in for `burn::nn::interpolate::Interpolate2d`: the same configuration and fields,
//! with [`crate::interpolate`] in `forward`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::interpolate::InterpolateMode;
use burn::tensor::ops::InterpolateOptions;
use burn::tensor::Tensor;

/// Configuration of [`Interpolate2d`], field for field Burn's `Interpolate2dConfig`.
#[derive(Config, Debug)]
pub struct Interpolate2dConfig {
    /// Output `[height, width]`; exactly one of this and `scale_factor`.
    #[config(default = "None")]
    pub output_size: Option<[usize; 2]>,
    /// `[height, width]` factors; the output is `floor(input · factor)`.
    #[config(default = "None")]
    pub scale_factor: Option<[f32; 2]>,
    /// Interpolation mode.
    #[config(default = "InterpolateMode::Nearest")]
    pub mode: InterpolateMode,
    /// Corner pixels aligned, else half-pixel centres.
    #[config(default = true)]
    pub align_corners: bool,
}

/// 2-D interpolation of `[N, C, H, W]`, deterministic, with a backward for every mode.
#[derive(Module, Debug)]
pub struct Interpolate2d {
    /// Output `[height, width]`; exactly one of this and `scale_factor`.
    pub output_size: Option<[usize; 2]>,
    /// `[height, width]` factors; the output is `floor(input · factor)`.
    pub scale_factor: Option<[f32; 2]>,
    /// Interpolation mode.
    #[module(skip)]
    pub mode: InterpolateMode,
    /// Corner pixels aligned, else half-pixel centres.
    pub align_corners: bool,
}

impl Interpolate2dConfig {
    /// The layer with this configuration.
    pub fn init(self) -> Interpolate2d {
        Interpolate2d {
            output_size: self.output_size,
            scale_factor: self.scale_factor,
            mode: self.mode,
            align_corners: self.align_corners,
        }
    }
}

impl Interpolate2d {
    /// `[N, C, H, W] → [N, C, P, Q]`.
    ///
    /// # Panics
    ///
    /// Where Burn's `Interpolate2d` panics (neither or both sizes set, a size rounding to zero).
    pub fn forward(&self, input: Tensor<4>) -> Tensor<4> {
        crate::interpolate(input, self.options())
    }

    /// The options `forward` resizes with.
    pub fn options(&self) -> InterpolateOptions {
        let mut options = InterpolateOptions::new(self.mode.clone().into())
            .with_align_corners(self.align_corners);
        options.output_size = self.output_size;
        options.scale_factor = self.scale_factor;
        options
    }
}

impl From<burn::nn::interpolate::Interpolate2d> for Interpolate2d {
    /// Burn's layer, made deterministic: the same sizes, mode and corners.
    fn from(layer: burn::nn::interpolate::Interpolate2d) -> Self {
        Self {
            output_size: layer.output_size,
            scale_factor: layer.scale_factor,
            mode: layer.mode,
            align_corners: layer.align_corners,
        }
    }
}
