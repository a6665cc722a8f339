//! Candle through the decorator: Candle panics on the bilinear forward and on every
//! interpolate backward; wrapped, a model with a bilinear upsample trains, and reproducibly.
#![cfg(feature = "candle")]
// burn-candle is deprecated in Burn 0.21 (its own notice), and still shipped and used.
#![allow(deprecated)]

use burn::backend::candle::CandleDevice;
use burn::backend::{Autodiff, Candle};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{Tensor, TensorData};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::harness::{panic_message, uniform};
use burn_deterministic_suite::metrics::sha256_hex;

fn bilinear() -> InterpolateOptions {
    InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false)
}

/// Fits a `[1, 2, 6, 6]` parameter so that its bilinear upsample to 12×12 matches a target, by
/// plain gradient descent: the losses and the final parameter's bits.
fn fit<B: AutodiffBackend>(device: &B::Device) -> (Vec<f32>, String) {
    let data = |seed, shape: [usize; 4]| {
        let n = shape.iter().product();
        let values: Vec<f32> = uniform(seed, n).iter().map(|v| *v as f32).collect();
        TensorData::new(values, shape)
    };
    let target = Tensor::<B, 4>::from_data(data(2, [1, 2, 12, 12]), device);
    let mut param = Tensor::<B, 4>::from_data(data(1, [1, 2, 6, 6]), device).require_grad();
    let mut losses = Vec::new();
    for _ in 0..20 {
        let y = interpolate(param.clone(), [12, 12], bilinear());
        let loss = (y - target.clone()).powi_scalar(2).mean();
        losses.push(
            loss.clone()
                .into_scalar()
                .to_string()
                .parse::<f32>()
                .unwrap(),
        );
        let grads = loss.backward();
        let grad = param.grad(&grads).expect("a gradient");
        param = Tensor::from_inner(param.inner() - grad * 2.0).require_grad();
    }
    (losses, sha256_hex(param.into_data().as_bytes()))
}

#[test]
fn plain_candle_cannot_train_a_bilinear_upsample() {
    let result = std::panic::catch_unwind(|| fit::<Autodiff<Candle>>(&CandleDevice::Cpu));
    let message = panic_message(result);
    assert!(message.contains("not supported by Candle"), "{message}");
}

#[test]
fn candle_trains_through_the_decorator_and_reproducibly() {
    type Train = Autodiff<DeterministicBackend<Candle>>;
    let (losses, hash) = fit::<Train>(&CandleDevice::Cpu);
    assert!(
        losses.last().unwrap() < &(losses[0] * 0.8),
        "the loss did not fall: {losses:?}"
    );
    let (again, hash_again) = fit::<Train>(&CandleDevice::Cpu);
    assert_eq!((losses, hash), (again, hash_again));
}
