//! Trains one upsample per mode through `Autodiff<DeterministicBackend<Candle>>`: Candle has
//! no bilinear, bicubic or lanczos3 forward and no interpolate backward at all, so a library
//! that probed kernels by catching their panic would abort in this binary.

#![allow(deprecated)] // burn-candle is deprecated in Burn 0.21, and still a backend users run

use burn::backend::candle::CandleDevice;
use burn::backend::{Autodiff, Candle};
use burn::module::{Module, Param};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{Distribution, Tensor};
use burn_deterministic::DeterministicBackend;

type Train = Autodiff<DeterministicBackend<Candle>>;

/// A learnable 4×4 map upsampled to 16×16.
#[derive(Module, Debug)]
struct Upsample<B: Backend> {
    coarse: Param<Tensor<B, 4>>,
}

fn fit(mode: InterpolateMode, device: &CandleDevice) -> (f32, f32) {
    <Train as Backend>::seed(device, 7);
    let target = Tensor::<Train, 4>::random([1, 1, 16, 16], Distribution::Default, device);
    let mut model = Upsample {
        coarse: Param::from_tensor(Tensor::zeros([1, 1, 4, 4], device)),
    };
    let mut optimizer = AdamConfig::new().init();
    let options = InterpolateOptions::new(mode).with_align_corners(false);
    let mut losses = Vec::new();
    for _ in 0..20 {
        let y = interpolate(model.coarse.val(), [16, 16], options.clone());
        let loss = (y - target.clone()).powi_scalar(2).mean();
        losses.push(loss.clone().into_scalar());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(0.1, model, grads);
    }
    (losses[0], losses[losses.len() - 1])
}

/// Every mode's loss must fall to half in 20 Adam steps.
pub fn train_every_mode() -> Result<(), String> {
    let device = CandleDevice::Cpu;
    let modes = [
        InterpolateMode::Nearest,
        InterpolateMode::Bilinear,
        InterpolateMode::Bicubic,
        InterpolateMode::Lanczos3,
    ];
    for mode in modes {
        let (first, last) = fit(mode.clone(), &device);
        println!("candle {mode:?}: loss {first:.5} -> {last:.5}");
        if !last.is_finite() || last >= 0.5 * first {
            return Err(format!("candle {mode:?}: the loss did not fall to half"));
        }
    }
    Ok(())
}
