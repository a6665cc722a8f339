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

use burn::config::Config;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::FileMetricLogger;
use burn::train::{Learner, SupervisedTraining};
use burn_deterministic_suite::experiment::{
    in_memory, run_example, training_strategy, BackendChoice, CommonArgs, CurveLogger, Experiment,
    RunConfig, RunLog, Samples,
};
use burn_deterministic_suite::metrics::parameter_hash;
use burn_deterministic_vision::data::{DepthSample, SyntheticDepth};
use burn_deterministic_vision::folder::DepthFolder;
use burn_deterministic_vision::metrics::DepthAccumulator;
use burn_deterministic_vision::models::DepthNet;
use burn_deterministic_vision::train::{evaluate_depth, DepthMetric, DepthStatistic, EpochLoss};
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Everything that determines a run (saved as `config.json` next to the results).
#[derive(Config, Debug)]
pub struct DepthTrainingConfig {
    pub optimizer: AdamConfig,
    pub run: RunConfig,
    /// PNG depth value per metre for `run.data_dir` (1000: millimetres; KITTI uses 256).
    #[config(default = 1000.0)]
    pub depth_scale: f32,
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

type Data = Samples<DepthSample>;

struct DepthExperiment {
    config: DepthTrainingConfig,
    train: Data,
    valid: Data,
    output_dir: PathBuf,
}

impl DepthExperiment {
    fn new(config: DepthTrainingConfig, output_dir: PathBuf) -> Result<Self, String> {
        let run = &config.run;
        let (train, valid): (Data, Data) = match &run.data_dir {
            Some(dir) => {
                let open = |split: &str| {
                    DepthFolder::open(PathBuf::from(dir).join(split), config.depth_scale)
                        .map_err(|e| e.to_string())
                };
                (in_memory(&open("train")?), in_memory(&open("valid")?))
            }
            None => {
                let size = [run.image_size; 2];
                (
                    in_memory(&SyntheticDepth::new(run.seed, size, run.train_size)),
                    in_memory(&SyntheticDepth::new(
                        run.validation_seed(),
                        size,
                        run.valid_size,
                    )),
                )
            }
        };
        Ok(Self {
            config,
            train,
            valid,
            output_dir,
        })
    }
}

impl Experiment for DepthExperiment {
    fn run<B: AutodiffBackend>(&self, devices: Vec<B::Device>, backend: BackendChoice) -> RunLog {
        let (config, run) = (&self.config, &self.config.run);
        let device = devices[0].clone();
        let device_count = devices.len();
        // Parameters are drawn from the backend's generator: seed it before building the model.
        B::seed(&device, run.seed);
        let model = DepthNet::<B>::new(&device);
        let (loader_train, loader_valid) =
            run.loaders::<B, _, _, _>(self.train.clone(), self.valid.clone(), &device);

        let curves = CurveLogger::default();
        let training = SupervisedTraining::new(&self.output_dir, loader_train, loader_valid)
            .with_metric_logger(FileMetricLogger::new(&self.output_dir))
            .with_metric_logger(curves.clone())
            .metric_train_numeric(EpochLoss::default())
            .metric_valid_numeric(EpochLoss::default())
            .metric_train_numeric(DepthMetric::new(DepthStatistic::Delta1))
            .metric_valid_numeric(DepthMetric::new(DepthStatistic::Delta1))
            .metric_valid_numeric(DepthMetric::new(DepthStatistic::AbsRel))
            .metric_valid_numeric(DepthMetric::new(DepthStatistic::Rmse))
            .with_training_strategy(training_strategy(devices))
            .num_epochs(run.epochs)
            .summary();
        let learner = Learner::new(model, config.optimizer.init(), run.learning_rate);

        let start = Instant::now();
        let result = training.launch(learner);
        let training_seconds = start.elapsed().as_secs_f64();

        let model = result.model;
        let (loss, metrics) = evaluate_depth(&model, &self.valid, run.batch_size, &device);
        // Reference: a constant prediction, median-scaled like the model's (what a net that
        // learned nothing about the scene's geometry scores).
        let mut constant = DepthAccumulator::new(true);
        for sample in self.valid.iter() {
            constant.add_image(&vec![1.0; sample.depth.len()], &sample.depth);
        }
        RunLog {
            example: "depth".into(),
            backend,
            devices: device_count,
            config: serde_json::to_value(config).expect("config is serialisable"),
            epochs: curves.records(),
            final_metrics: BTreeMap::from([
                ("loss".to_string(), loss),
                ("delta1 %".to_string(), 100.0 * metrics.delta1),
                ("AbsRel".to_string(), metrics.abs_rel),
                ("RMSE m".to_string(), metrics.rmse),
                (
                    "constant-prediction delta1 %".to_string(),
                    100.0 * constant.metrics().delta1,
                ),
            ]),
            training_seconds,
            parameter_sha256: parameter_hash(&model.no_grad()),
        }
    }
}

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
        &args.common,
        "depth",
        |path| config.save(path),
        |output_dir| DepthExperiment::new(config.clone(), output_dir),
    )
}
