//! Deterministic semantic-segmentation training with burn-train's `Learner` on
//! `Autodiff<DeterministicBackend<B>>`.
//!
//! The model predicts main logits at 1/4 and auxiliary logits at 1/8 of the image size; the loss
//! upsamples both to the mask size with bilinear interpolation (align_corners = false), whose
//! backward Burn 0.21's ndarray, wgpu and CUDA backends do not implement. Through the decorator
//! the resize is two matmuls forward and their adjoint backward, so training runs, and two runs
//! with the same seed give bit-identical parameters.
//!
//! ```text
//! cargo run --example segmentation                           # flex (CPU), the main job
//! cargo run --example segmentation -- --check-determinism
//! cargo run --example segmentation --features wgpu -- --backend wgpu
//! cargo run --example segmentation -- --help
//! ```
//!
//! `main` picks the backend type; `train` is generic over it and holds the whole burn-train
//! set-up. The model and datasets (`burn-deterministic-vision`) are plain Burn.

use burn::backend::Autodiff;
use burn::config::Config;
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::FileMetricLogger;
use burn::train::{Learner, SupervisedTraining};
use burn_deterministic::train::{parameter_hash, TracedOptimizer};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::example_support::devices::{
    cpu_devices, training_strategy, BackendChoice,
};
use burn_deterministic_suite::example_support::flow::{run_example, BURN_021};
use burn_deterministic_suite::example_support::run_config::{
    checkpointed_and_rendered, in_memory, loaders, CommonArgs, RunConfig, Samples,
};
use burn_deterministic_suite::example_support::run_log::{CurveLogger, Trained};
use burn_deterministic_vision::data::SegmentationSample;
use burn_deterministic_vision::models::SegmentationConfig;
use burn_deterministic_vision::run::config::{segmentation_splits, SegmentationOptions};
use burn_deterministic_vision::train::{EpochLoss, SegmentationMetric, SegmentationStatistic};
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
        &BURN_021,
        &args.common,
        "segmentation",
        &config,
        |output_dir| {
            let data = SegmentationData::load(&config)?;
            let devices = usize::from(args.common.devices);
            // The backend: Burn's own, wrapped by the decorator, under autodiff.
            Ok(match args.common.backend {
                #[cfg(feature = "flex")]
                BackendChoice::Flex => {
                    train::<Autodiff<DeterministicBackend<burn::backend::Flex>>>(
                        &config,
                        &data,
                        cpu_devices(devices),
                        output_dir,
                        &args.common,
                    )
                }
                #[cfg(feature = "ndarray")]
                BackendChoice::Ndarray => {
                    train::<Autodiff<DeterministicBackend<burn::backend::NdArray>>>(
                        &config,
                        &data,
                        cpu_devices(devices),
                        output_dir,
                        &args.common,
                    )
                }
                #[cfg(feature = "wgpu")]
                BackendChoice::Wgpu => {
                    train::<Autodiff<DeterministicBackend<burn::backend::Wgpu>>>(
                        &config,
                        &data,
                        burn_deterministic_suite::example_support::devices::wgpu_devices(devices)?,
                        output_dir,
                        &args.common,
                    )
                }
                #[cfg(feature = "cuda")]
                BackendChoice::Cuda => {
                    train::<Autodiff<DeterministicBackend<burn::backend::Cuda>>>(
                        &config,
                        &data,
                        burn_deterministic_suite::example_support::devices::cuda_devices(devices),
                        output_dir,
                        &args.common,
                    )
                }
                #[allow(unreachable_patterns)]
                other => return Err(other.missing_feature()),
            })
        },
    )
}

/// Trains the segmentation net with burn-train's `Learner` on `devices` (the first is the main
/// device: the optimizer steps and validation run there), logging into `output_dir`.
/// `common` gives the epoch to resume after and how several devices' gradients are combined.
pub fn train<B: AutodiffBackend>(
    config: &SegmentationTrainingConfig,
    data: &SegmentationData,
    devices: Vec<B::Device>,
    output_dir: &Path,
    common: &CommonArgs,
) -> Trained {
    let resume_after = common.resume;
    let run = &config.run;
    let device = devices[0].clone();
    let device_count = devices.len();
    // Parameters are drawn from the backend's generator: seed it before building the model.
    B::seed(&device, run.seed);
    let model = config.model.init::<B>(&device);
    let (loader_train, loader_valid) = loaders::<B, _, _, _>(
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
    // Traced: in the runs `--check-determinism` starts, each step's gradients are hashed, so
    // that the check can name the first step and parameter where the runs differ.
    let optimizer = TracedOptimizer::new(config.optimizer.init());
    let learner = Learner::new(model, optimizer, run.learning_rate);

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
        parameter_sha256: parameter_hash(&result.model.no_grad()),
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
#[command(about = "Deterministic segmentation training through burn-deterministic")]
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
