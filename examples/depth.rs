//! Deterministic monocular depth training with burn-train's `Learner` on
//! `Autodiff<DeterministicBackend<B>>`.
//!
//! An encoder + FPN decoder whose top-down path upsamples with `scale_factor = 2`, bilinear,
//! `align_corners = true`; the scale-invariant log loss compares the prediction upsampled to the
//! ground-truth size (align_corners = true) on valid pixels. Metrics (δ1, AbsRel, RMSE) are
//! computed after per-image median scaling, the usual protocol for a scale-invariant loss.
//!
//! ```text
//! cargo run --example depth                       # flex (CPU)
//! cargo run --example depth -- --check-determinism
//! cargo run --example depth --features wgpu -- --backend wgpu
//! cargo run --example depth -- --help
//! ```
//!
//! `main` picks the backend type; `train` is generic over it and holds the whole burn-train
//! set-up. The model and datasets (`burn-deterministic-vision`) are plain Burn.

use burn::backend::Autodiff;
use burn::config::Config;
use burn::data::dataset::Dataset;
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
use burn_deterministic_suite::example_support::flow::run_example;
use burn_deterministic_suite::example_support::run_config::{
    checkpointed_and_rendered, in_memory, CommonArgs, RunConfig, Samples,
};
use burn_deterministic_suite::example_support::run_log::{CurveLogger, Trained};
use burn_deterministic_vision::data::{DepthSample, SyntheticDepth};
use burn_deterministic_vision::folder::DepthFolder;
use burn_deterministic_vision::metrics::DepthAccumulator;
use burn_deterministic_vision::models::DepthNet;
use burn_deterministic_vision::train::{DepthMetric, DepthStatistic, EpochLoss};
use clap::Parser;
use std::path::{Path, PathBuf};
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
    run_example(&args.common, "depth", &config, |output_dir| {
        let data = DepthData::load(&config)?;
        let devices = usize::from(args.common.devices);
        // The backend: Burn's own, wrapped by the decorator, under autodiff.
        Ok(match args.common.backend {
            #[cfg(feature = "flex")]
            BackendChoice::Flex => train::<Autodiff<DeterministicBackend<burn::backend::Flex>>>(
                &config,
                &data,
                cpu_devices(devices),
                output_dir,
                args.common.resume,
            ),
            #[cfg(feature = "ndarray")]
            BackendChoice::Ndarray => {
                train::<Autodiff<DeterministicBackend<burn::backend::NdArray>>>(
                    &config,
                    &data,
                    cpu_devices(devices),
                    output_dir,
                    args.common.resume,
                )
            }
            #[cfg(feature = "wgpu")]
            BackendChoice::Wgpu => train::<Autodiff<DeterministicBackend<burn::backend::Wgpu>>>(
                &config,
                &data,
                burn_deterministic_suite::example_support::devices::wgpu_devices(devices)?,
                output_dir,
                args.common.resume,
            ),
            #[cfg(feature = "cuda")]
            BackendChoice::Cuda => train::<Autodiff<DeterministicBackend<burn::backend::Cuda>>>(
                &config,
                &data,
                burn_deterministic_suite::example_support::devices::cuda_devices(devices),
                output_dir,
                args.common.resume,
            ),
            #[allow(unreachable_patterns)]
            other => return Err(other.missing_feature()),
        })
    })
}

/// Trains the depth net with burn-train's `Learner` on `devices` (the first is the main device:
/// the optimizer steps and validation run there), logging into `output_dir`.
pub fn train<B: AutodiffBackend>(
    config: &DepthTrainingConfig,
    data: &DepthData,
    devices: Vec<B::Device>,
    output_dir: &Path,
    resume_after: Option<usize>,
) -> Trained {
    let run = &config.run;
    let device = devices[0].clone();
    let device_count = devices.len();
    // Parameters are drawn from the backend's generator: seed it before building the model.
    B::seed(&device, run.seed);
    let model = DepthNet::<B>::new(&device);
    let (loader_train, loader_valid) = run.loaders::<B, _, _, _>(
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
        .with_training_strategy(training_strategy(devices))
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
        ("delta1", "delta1 %"),
        ("AbsRel", "AbsRel"),
        ("RMSE", "RMSE m"),
    ]);
    // Reference: a constant prediction, median-scaled like the model's (what a net that learned
    // nothing about the scene's geometry scores).
    let mut constant = DepthAccumulator::new(true);
    for sample in data.valid.iter() {
        constant.add_image(&vec![1.0; sample.depth.len()], &sample.depth);
    }
    final_metrics.insert(
        "constant-prediction delta1 %".into(),
        100.0 * constant.metrics().delta1,
    );
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
    /// PNG folders (`run.data_dir`), else seeded synthetic scenes.
    fn load(config: &DepthTrainingConfig) -> Result<Self, String> {
        let run = &config.run;
        if let Some(dir) = &run.data_dir {
            let open = |split: &str| {
                DepthFolder::open(PathBuf::from(dir).join(split), config.depth_scale)
                    .map_err(|e| e.to_string())
            };
            return Ok(Self {
                train: in_memory(&open("train")?),
                valid: in_memory(&open("valid")?),
            });
        }
        let synthetic =
            |seed, count| in_memory(&SyntheticDepth::new(seed, [run.image_size; 2], count));
        Ok(Self {
            train: synthetic(run.seed, run.train_size),
            valid: synthetic(run.validation_seed(), run.valid_size),
        })
    }
}

#[derive(Parser, Debug)]
#[command(about = "Deterministic depth training through burn-deterministic")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// PNG depth value per metre, for --data-dir.
    #[arg(long)]
    depth_scale: Option<f32>,
}

impl Args {
    fn config(&self) -> Result<DepthTrainingConfig, String> {
        let mut config = match &self.common.config {
            Some(path) => DepthTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => DepthTrainingConfig::new(AdamConfig::new(), RunConfig::new()),
        };
        config.run.apply(&self.common)?;
        config.depth_scale = self.depth_scale.unwrap_or(config.depth_scale);
        Ok(config)
    }
}
