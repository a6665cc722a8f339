//! Deterministic semantic-segmentation training on Burn 0.22.1 with burn-train's `Learner`.
//!
//! The model predicts main logits at 1/4 and auxiliary logits at 1/8 of the image size; the loss
//! upsamples both to the mask size with bilinear interpolation (align_corners = false), whose
//! backward Burn 0.22's flex and wgpu do not implement. Through `burn_deterministic_tensor` the
//! resize is two matmuls forward and their adjoint backward, the loss's gather and reductions
//! have a fixed order, so training runs, and two runs with the same seed give bit-identical
//! parameters.
//!
//! ```text
//! cargo run --release -p burn-deterministic-tensor --features train --example segmentation
//! cargo run --release -p burn-deterministic-tensor --features train --example segmentation -- --check-determinism
//! cargo run --release -p burn-deterministic-tensor --features train --example segmentation -- --backend wgpu
//! cargo run --release -p burn-deterministic-tensor --features train --example segmentation -- --help
//! ```
//!
//! The model, data, metrics and the burn-train glue are `burn_deterministic_vision`'s (its
//! Burn-free parts shared with the Burn 0.21 examples); the options and the flow too.

mod support;

use burn::config::Config;
use burn::optim::AdamConfig;
use burn::tensor::Device;
use burn::train::logger::FileMetricLogger;
use burn::train::{Learner, SupervisedTraining};
use burn_deterministic_tensor::train::parameter_hash;
use burn_deterministic_vision::burn022::models::SegmentationConfig;
use burn_deterministic_vision::burn022::train::{
    checkpointed_and_rendered, in_memory, loaders, training_strategy, CurveLogger, EpochLoss,
    Samples, SegmentationMetric,
};
use burn_deterministic_vision::burn022::BURN_022;
use burn_deterministic_vision::data::SegmentationSample;
use burn_deterministic_vision::metrics::SegmentationStatistic;
use burn_deterministic_vision::run::config::{
    segmentation_splits, CommonArgs, RunConfig, SegmentationOptions,
};
use burn_deterministic_vision::run::flow::run_example;
use burn_deterministic_vision::run::log::Trained;
use clap::Parser;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match args.config() {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    run_example(
        &BURN_022,
        &args.common,
        "segmentation",
        &config,
        |output_dir| {
            let data = SegmentationData::load(&config)?;
            let devices = support::devices(args.common.backend, usize::from(args.common.devices))?;
            Ok(train(&config, &data, devices, output_dir, &args.common))
        },
    )
}

/// Trains the segmentation net with burn-train's `Learner` on `devices` (the first is the main
/// device: the optimizer steps and validation run there), logging into `output_dir`.
/// `common` gives the epoch to resume after and how several devices' gradients are combined.
pub fn train(
    config: &SegmentationTrainingConfig,
    data: &SegmentationData,
    devices: Vec<Device>,
    output_dir: &Path,
    common: &CommonArgs,
) -> Trained {
    let resume_after = common.resume;
    let run = &config.run;
    let device = devices[0].clone();
    let device_count = devices.len();
    // Parameters are drawn from the device's generator: seed it before building the model.
    device.seed(run.seed);
    let model = config.model.init(&device);
    let (loader_train, loader_valid) = loaders(
        run,
        data.train.clone(),
        data.valid.clone(),
        &device,
        resume_after,
    );

    let classes = config.model.classes;
    let metric = |statistic| SegmentationMetric::new(statistic, classes);
    let curves = CurveLogger::default();
    let training = SupervisedTraining::new(output_dir, loader_train, loader_valid)
        .with_metric_logger(FileMetricLogger::new(output_dir))
        .with_metric_logger(curves.clone())
        .metric_train_numeric(EpochLoss::default())
        .metric_valid_numeric(EpochLoss::default())
        .metric_train_numeric(metric(SegmentationStatistic::MeanIou))
        .metric_valid_numeric(metric(SegmentationStatistic::MeanIou))
        .metric_train_numeric(metric(SegmentationStatistic::PixelAccuracy))
        .metric_valid_numeric(metric(SegmentationStatistic::PixelAccuracy))
        .with_training_strategy(training_strategy(devices, common.data_parallel))
        .num_epochs(run.epochs)
        .summary();
    let training = checkpointed_and_rendered(training, resume_after);
    let learner = Learner::new(model, config.optimizer.init(), run.learning_rate);

    let start = Instant::now();
    let result = training.launch(learner);
    let training_seconds = start.elapsed().as_secs_f64();

    let mut final_metrics = curves.final_validation(&[
        ("Loss", "loss"),
        ("mIoU", "mIoU %"),
        ("Pixel Accuracy", "pixel accuracy %"),
    ]);
    final_metrics.insert("chance mIoU %".into(), 100.0 / classes as f64);
    Trained {
        devices: device_count,
        epochs: curves.records(),
        final_metrics,
        training_seconds,
        parameter_sha256: parameter_hash(&result.model),
    }
}

/// Everything that determines a run (saved as `config.json` next to the results).
#[derive(Config, Debug)]
pub struct SegmentationTrainingConfig {
    pub model: SegmentationConfig,
    pub optimizer: AdamConfig,
    pub run: RunConfig,
}

/// The training and validation samples, in memory.
pub struct SegmentationData {
    train: Samples<SegmentationSample>,
    valid: Samples<SegmentationSample>,
}

impl SegmentationData {
    /// PNG folders (`run.data_dir`), else seeded synthetic scenes, read into memory.
    fn load(config: &SegmentationTrainingConfig) -> Result<Self, String> {
        let [train, valid] = segmentation_splits(&config.run, config.model.classes)?;
        Ok(Self {
            train: in_memory(train.as_ref()),
            valid: in_memory(valid.as_ref()),
        })
    }
}

#[derive(Parser, Debug)]
#[command(
    about = "Deterministic segmentation training on Burn 0.22 through burn-deterministic-tensor"
)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    segmentation: SegmentationOptions,
}

impl Args {
    fn config(&self) -> Result<SegmentationTrainingConfig, String> {
        let mut config = match &self.common.config {
            Some(path) => SegmentationTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => SegmentationTrainingConfig::new(
                SegmentationConfig::new(),
                AdamConfig::new(),
                RunConfig::default(),
            ),
        };
        config.run.apply(&self.common)?;
        let model = &mut config.model;
        self.segmentation
            .apply(&mut model.classes, &mut model.dropout)?;
        Ok(config)
    }
}
