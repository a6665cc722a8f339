//! Candle through the decorator: Candle panics on the bilinear forward and on every
//! interpolate backward; wrapped, a model with a bilinear upsample trains, and reproducibly.
#![cfg(feature = "candle")]
// burn-candle is deprecated in Burn 0.21 (its own notice), and still shipped and used.
#![allow(deprecated)]

use burn::backend::candle::CandleDevice;
use burn::backend::{Autodiff, Candle};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::harness::{fit_bilinear_upsample, panic_message};

#[test]
fn plain_candle_cannot_train_a_bilinear_upsample() {
    let result =
        std::panic::catch_unwind(|| fit_bilinear_upsample::<Autodiff<Candle>>(&CandleDevice::Cpu));
    let message = panic_message(result);
    assert!(message.contains("not supported by Candle"), "{message}");
}

#[test]
fn candle_trains_through_the_decorator_and_reproducibly() {
    type Train = Autodiff<DeterministicBackend<Candle>>;
    let fit = fit_bilinear_upsample::<Train>(&CandleDevice::Cpu);
    let losses = &fit.losses;
    assert!(
        losses.last().unwrap() < &(losses[0] * 0.8),
        "the loss did not fall: {losses:?}"
    );
    assert_eq!(fit, fit_bilinear_upsample::<Train>(&CandleDevice::Cpu));
}
