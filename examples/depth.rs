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
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::FileMetricLogger;
use burn::train::{Learner, SupervisedTraining};
use burn_deterministic_suite::experiment::{
    run_example, BackendChoice, CommonArgs, CurveLogger, Experiment, RunLog,
};
use burn_deterministic_suite::metrics::parameter_hash;
use burn_deterministic_vision::data::{DepthSample, SyntheticDepth};
use burn_deterministic_vision::folder::DepthFolder;
use burn_deterministic_vision::metrics::DepthAccumulator;
use burn_deterministic_vision::models::DepthNet;
use burn_deterministic_vision::train::{
    evaluate_depth, DepthMetric, DepthStatistic, EpochLoss, RandomFlip, SampleBatcher,
};
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Everything that determines a run (saved as `config.json` next to the results).
#[derive(Config, Debug)]
pub struct DepthTrainingConfig {
    pub optimizer: AdamConfig,
    #[config(default = 10)]
    pub epochs: usize,
    #[config(default = 8)]
    pub batch_size: usize,
    #[config(default = 64)]
    pub image_size: usize,
    #[config(default = 256)]
    pub train_size: usize,
    #[config(default = 64)]
    pub valid_size: usize,
    #[config(default = 3e-3)]
    pub learning_rate: f64,
    #[config(default = 42)]
    pub seed: u64,
    /// A folder with `train/` and `valid/` subfolders of PNGs instead of synthetic data.
    pub data_dir: Option<String>,
    /// PNG depth value per metre for `data_dir` (1000: millimetres; KITTI uses 256).
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
        let c = &self.common;
        let mut config = match &c.config {
            Some(path) => DepthTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => DepthTrainingConfig::new(AdamConfig::new()),
        };
        config.epochs = c.epochs.unwrap_or(config.epochs);
        config.batch_size = c.batch_size.unwrap_or(config.batch_size);
        config.image_size = c.image_size.unwrap_or(config.image_size);
        config.train_size = c.train_size.unwrap_or(config.train_size);
        config.valid_size = c.valid_size.unwrap_or(config.valid_size);
        config.learning_rate = c.learning_rate.unwrap_or(config.learning_rate);
        config.seed = c.seed.unwrap_or(config.seed);
        config.depth_scale = self.depth_scale.unwrap_or(config.depth_scale);
        if let Some(dir) = &c.data_dir {
            config.data_dir = Some(dir.display().to_string());
        }
        if config.image_size == 0 || !config.image_size.is_multiple_of(8) {
            return Err(format!(
                "--image-size must be a positive multiple of 8, got {}",
                config.image_size
            ));
        }
        if config.batch_size == 0 || config.epochs == 0 {
            return Err("--batch-size and --epochs must be positive".into());
        }
        Ok(config)
    }
}

/// Samples held in memory, shared by the loaders and the final evaluation.
type Data = Arc<InMemDataset<DepthSample>>;

fn in_memory(data: &dyn Dataset<DepthSample>) -> Data {
    Arc::new(InMemDataset::new(
        (0..data.len()).filter_map(|i| data.get(i)).collect(),
    ))
}

struct DepthExperiment {
    config: DepthTrainingConfig,
    train: Data,
    valid: Data,
    output_dir: PathBuf,
}

impl DepthExperiment {
    fn new(config: DepthTrainingConfig, output_dir: PathBuf) -> Result<Self, String> {
        let (train, valid): (Data, Data) = match &config.data_dir {
            Some(dir) => {
                let open = |split: &str| {
                    DepthFolder::open(PathBuf::from(dir).join(split), config.depth_scale)
                        .map_err(|e| e.to_string())
                };
                (in_memory(&open("train")?), in_memory(&open("valid")?))
            }
            None => {
                let size = [config.image_size; 2];
                (
                    in_memory(&SyntheticDepth::new(config.seed, size, config.train_size)),
                    // A different stream of scenes for validation.
                    in_memory(&SyntheticDepth::new(
                        config.seed ^ 0x005E_ED0F_FA11,
                        size,
                        config.valid_size,
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
    fn run<B: AutodiffBackend>(&self, device: B::Device, backend: BackendChoice) -> RunLog {
        let config = &self.config;
        // Parameters are drawn from the backend's generator: seed it before building the model.
        B::seed(&device, config.seed);
        let model = DepthNet::<B>::new(&device);

        // One loader thread (no `num_workers`): burn's multi-worker loader yields batches in the
        // order the workers finish them, which changes the data order from run to run.
        let loader_train = DataLoaderBuilder::<B, _, _>::new(SampleBatcher)
            .batch_size(config.batch_size)
            .shuffle(config.seed)
            .set_device(device.clone())
            .build(RandomFlip {
                inner: self.train.clone(),
                seed: config.seed,
            });
        let loader_valid = DataLoaderBuilder::<B::InnerBackend, _, _>::new(SampleBatcher)
            .batch_size(config.batch_size)
            .set_device(device.clone())
            .build(self.valid.clone());

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
            .num_epochs(config.epochs)
            .summary();
        let learner = Learner::new(model, config.optimizer.init(), config.learning_rate);

        let start = Instant::now();
        let result = training.launch(learner);
        let training_seconds = start.elapsed().as_secs_f64();

        let model = result.model;
        let (loss, metrics) = evaluate_depth(&model, &self.valid, config.batch_size, &device);
        // Reference: a constant prediction, median-scaled like the model's (what a net that
        // learned nothing about the scene's geometry scores).
        let mut constant = DepthAccumulator::new(true);
        for sample in self.valid.iter() {
            constant.add_image(&vec![1.0; sample.depth.len()], &sample.depth);
        }
        RunLog {
            example: "depth".into(),
            backend,
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
