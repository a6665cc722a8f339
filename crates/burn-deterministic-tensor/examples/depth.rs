//! Deterministic monocular depth training on Burn 0.22.1 with burn-train's `Learner`.
//!
//! The depth net's FPN decoder upsamples with `scale_factor = 2` (bilinear, align_corners =
//! true) and the scale-invariant loss upsamples the prediction to the ground truth; through
//! `burn_deterministic_tensor` both are two matmuls forward and their adjoint backward, the
//! loss's reductions have a fixed order, and two runs with the same seed give bit-identical
//! parameters.
//!
//! ```text
//! cargo run --release -p burn-deterministic-tensor --features train --example depth
//! cargo run --release -p burn-deterministic-tensor --features train --example depth -- --check-determinism
//! cargo run --release -p burn-deterministic-tensor --features train --example depth -- --help
//! ```

mod support;

use burn::config::Config;
use burn::data::dataset::Dataset;
use burn::optim::AdamConfig;
use burn::tensor::Device;
use burn::train::logger::FileMetricLogger;
use burn::train::{Learner, SupervisedTraining};
use burn_deterministic_tensor::train::parameter_hash;
use burn_deterministic_vision::burn022::models::DepthNet;
use burn_deterministic_vision::burn022::train::{
    checkpointed_and_rendered, in_memory, loaders, training_strategy, CurveLogger, DepthMetric,
    EpochLoss, Samples,
};
use burn_deterministic_vision::burn022::BURN_022;
use burn_deterministic_vision::data::DepthSample;
use burn_deterministic_vision::metrics::{constant_prediction_delta1, DepthStatistic};
use burn_deterministic_vision::run::config::{depth_splits, CommonArgs, DepthOptions, RunConfig};
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
    run_example(&BURN_022, &args.common, "depth", &config, |output_dir| {
        let data = DepthData::load(&config)?;
        let devices = support::devices(args.common.backend, usize::from(args.common.devices))?;
        Ok(train(&config, &data, devices, output_dir, &args.common))
    })
}

/// Trains the depth net with burn-train's `Learner` on `devices` (the first is the main device:
/// the optimizer steps and validation run there), logging into `output_dir`.
/// `common` gives the epoch to resume after and how several devices' gradients are combined.
pub fn train(
    config: &DepthTrainingConfig,
    data: &DepthData,
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
    let model = DepthNet::new(&device);
    let (loader_train, loader_valid) = loaders(
        run,
        data.train.clone(),
        data.valid.clone(),
        &device,
        resume_after,
    );

    let curves = CurveLogger::default();
    let training = SupervisedTraining::new(output_dir, loader_train, loader_valid)
        .with_metric_logger(FileMetricLogger::new(output_dir))
        .with_metric_logger(curves.clone())
        .metric_train_numeric(EpochLoss::default())
        .metric_valid_numeric(EpochLoss::default())
        .metric_train_numeric(DepthMetric::new(DepthStatistic::Delta1))
        .metric_valid_numeric(DepthMetric::new(DepthStatistic::Delta1))
        .metric_train_numeric(DepthMetric::new(DepthStatistic::AbsRel))
        .metric_valid_numeric(DepthMetric::new(DepthStatistic::AbsRel))
        .metric_train_numeric(DepthMetric::new(DepthStatistic::Rmse))
        .metric_valid_numeric(DepthMetric::new(DepthStatistic::Rmse))
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
        ("delta1", "delta1 %"),
        ("AbsRel", "AbsRel"),
        ("RMSE", "RMSE m"),
    ]);
    final_metrics.insert(
        "constant-prediction delta1 %".into(),
        // In-memory samples cannot fail to load.
        constant_prediction_delta1(data.valid.iter().filter_map(Result::ok)),
    );
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
pub struct DepthTrainingConfig {
    pub optimizer: AdamConfig,
    pub run: RunConfig,
    /// PNG depth value per metre for `run.data_dir` (1000: millimetres; KITTI uses 256).
    #[config(default = 1000.0)]
    pub depth_scale: f32,
}

/// The training and validation samples, in memory.
pub struct DepthData {
    train: Samples<DepthSample>,
    valid: Samples<DepthSample>,
}

impl DepthData {
    /// PNG folders (`run.data_dir`), else seeded synthetic scenes, read into memory.
    fn load(config: &DepthTrainingConfig) -> Result<Self, String> {
        let [train, valid] = depth_splits(&config.run, config.depth_scale)?;
        Ok(Self {
            train: in_memory(train.as_ref()),
            valid: in_memory(valid.as_ref()),
        })
    }
}

#[derive(Parser, Debug)]
#[command(about = "Deterministic depth training on Burn 0.22 through burn-deterministic-tensor")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    depth: DepthOptions,
}

impl Args {
    fn config(&self) -> Result<DepthTrainingConfig, String> {
        let mut config = match &self.common.config {
            Some(path) => DepthTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => DepthTrainingConfig::new(AdamConfig::new(), RunConfig::default()),
        };
        config.run.apply(&self.common)?;
        config.depth_scale = self.depth.depth_scale.unwrap_or(config.depth_scale);
        Ok(config)
    }
}
