//! burn-train 0.22.1's multi-device training, measured (feature `train`): its `MultiDevice`
//! strategy adds the workers' gradients in the order the workers finish, so three flex
//! "devices" (worker threads on the CPU) train to different bits from process to process — the
//! negative control — while the crate's `FixedOrderDataParallel` gives one hash. Both through
//! burn-train's `Learner` and the example segmentation net, whose optimizer steps record the
//! check's trace: the failing check also says where the runs first differ.

mod common;

use burn::optim::AdamConfig;
use burn::tensor::Device;
use burn::train::{
    ExecutionStrategy, Learner, MultiDeviceOptim, SupervisedTraining, TrainingStrategy,
};
use burn_deterministic_tensor::train::{
    print_parameter_hash, DeterminismCheck, FixedOrderDataParallel, PlainProgress,
    AUTOTUNE_CACHE_ENV,
};
use burn_deterministic_testkit::child::CASE_ENV;
use burn_deterministic_vision::burn022::models::SegmentationConfig;
use burn_deterministic_vision::burn022::train::{in_memory, loaders, EpochLoss};
use burn_deterministic_vision::data::SyntheticSegmentation;
use burn_deterministic_vision::run::config::RunConfig;
use std::sync::Arc;

const HELPER: &str = "child_process_helper";

/// One epoch of the segmentation net on three flex devices, with burn-train's strategy
/// (`burn`) or the crate's (`fixed`).
fn train(strategy: &str) -> burn_deterministic_vision::burn022::models::SegmentationNet {
    let run = RunConfig {
        epochs: 1,
        batch_size: 4,
        image_size: 16,
        train_size: 36,
        valid_size: 4,
        ..RunConfig::default()
    };
    let device = Device::flex().autodiff();
    device.seed(run.seed);
    let data = |seed, count| in_memory(&SyntheticSegmentation::new(seed, [16, 16], 4, count));
    let (train, valid) = loaders(
        &run,
        data(run.seed, run.train_size),
        data(run.validation_seed(), run.valid_size),
        &device,
        None,
    );
    let devices = vec![device.clone(); 3];
    let strategy = match strategy {
        "burn" => TrainingStrategy::Default(ExecutionStrategy::MultiDevice(
            devices,
            MultiDeviceOptim::OptimMainDevice,
        )),
        _ => TrainingStrategy::Custom(Arc::new(FixedOrderDataParallel::new(devices))),
    };
    let dir = burn_deterministic_testkit::fresh_dir("toolkit-learner");
    let training = SupervisedTraining::new(&dir, train, valid)
        .metric_train_numeric(EpochLoss::default())
        .with_training_strategy(strategy)
        .renderer(Box::new(PlainProgress::new()))
        .num_epochs(run.epochs);
    let model = SegmentationConfig::new().with_classes(4).init(&device);
    let learner = Learner::new(model, AdamConfig::new().init(), 1e-2);
    training.launch(learner).model
}

#[test]
#[ignore = "run by the other tests in a child process"]
fn child_process_helper() {
    if let Some(strategy) = burn_deterministic_testkit::child::case() {
        print_parameter_hash(&train(&strategy));
    }
}

fn check(strategy: &str, runs: usize) -> burn_deterministic_tensor::train::CheckReport {
    let exe = std::env::current_exe().expect("the test binary");
    let (key, value) = AUTOTUNE_CACHE_ENV;
    DeterminismCheck::new(exe, ["--exact", HELPER, "--ignored", "--nocapture"], runs)
        .with_env(CASE_ENV, strategy)
        .with_env(key, value)
        .run()
        .unwrap_or_else(|error| panic!("{strategy}: {error}"))
}

#[test]
fn burn_trains_three_devices_to_different_bits_and_the_fixed_order_strategy_does_not() {
    let burn = check("burn", 4);
    let text = burn.to_string();
    assert!(
        !burn.identical(),
        "burn-train's MultiDevice gave one hash in 4 processes: the control cannot fail\n{text}"
    );
    // Where: a step's gradients (summed in finishing order) differ; the locator names one.
    let difference = burn
        .first_difference
        .as_ref()
        .unwrap_or_else(|| panic!("the check did not locate the difference:\n{text}"));
    assert!(difference.step >= 1, "{text}");
    assert!(text.contains("first difference: step "), "{text}");

    let fixed = check("fixed", 4);
    assert!(fixed.identical(), "{fixed}");
    assert!(fixed.traced, "the runs traced no step");
}
