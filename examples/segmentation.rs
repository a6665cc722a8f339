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
use burn_deterministic_vision::data::{SegmentationSample, SyntheticSegmentation};
use burn_deterministic_vision::folder::SegmentationFolder;
use burn_deterministic_vision::models::SegmentationConfig;
use burn_deterministic_vision::train::{
    evaluate_segmentation, EpochLoss, RandomFlip, SampleBatcher, SegmentationMetric,
    SegmentationStatistic,
};
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Everything that determines a run (saved as `config.json` next to the results).
#[derive(Config, Debug)]
pub struct SegmentationTrainingConfig {
    pub model: SegmentationConfig,
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
}

#[derive(Parser, Debug)]
#[command(about = "Deterministic segmentation training through burn-deterministic")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Number of classes, background included (synthetic data: shape kinds and colours).
    #[arg(long)]
    classes: Option<usize>,
}

impl Args {
    fn config(&self) -> Result<SegmentationTrainingConfig, String> {
        let c = &self.common;
        let mut config = match &c.config {
            Some(path) => SegmentationTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => SegmentationTrainingConfig::new(SegmentationConfig::new(), AdamConfig::new()),
        };
        config.epochs = c.epochs.unwrap_or(config.epochs);
        config.batch_size = c.batch_size.unwrap_or(config.batch_size);
        config.image_size = c.image_size.unwrap_or(config.image_size);
        config.train_size = c.train_size.unwrap_or(config.train_size);
        config.valid_size = c.valid_size.unwrap_or(config.valid_size);
        config.learning_rate = c.learning_rate.unwrap_or(config.learning_rate);
        config.seed = c.seed.unwrap_or(config.seed);
        config.model.classes = self.classes.unwrap_or(config.model.classes);
        if let Some(dir) = &c.data_dir {
            config.data_dir = Some(dir.display().to_string());
        }
        if config.image_size == 0 || !config.image_size.is_multiple_of(8) {
            return Err(format!(
                "--image-size must be a positive multiple of 8, got {}",
                config.image_size
            ));
        }
        if config.batch_size == 0 || config.epochs == 0 || config.model.classes < 2 {
            return Err("--batch-size and --epochs must be positive, --classes at least 2".into());
        }
        Ok(config)
    }
}

/// Samples held in memory, shared by the loaders and the final evaluation.
type Data = Arc<InMemDataset<SegmentationSample>>;

fn in_memory(data: &dyn Dataset<SegmentationSample>) -> Data {
    Arc::new(InMemDataset::new(
        (0..data.len()).filter_map(|i| data.get(i)).collect(),
    ))
}

struct SegmentationExperiment {
    config: SegmentationTrainingConfig,
    train: Data,
    valid: Data,
    output_dir: PathBuf,
}

impl SegmentationExperiment {
    fn new(config: SegmentationTrainingConfig, output_dir: PathBuf) -> Result<Self, String> {
        let (train, valid): (Data, Data) = match &config.data_dir {
            Some(dir) => {
                let open = |split: &str| {
                    SegmentationFolder::open(PathBuf::from(dir).join(split), config.model.classes)
                        .map_err(|e| e.to_string())
                };
                (in_memory(&open("train")?), in_memory(&open("valid")?))
            }
            None => {
                let size = [config.image_size; 2];
                let classes = config.model.classes;
                (
                    in_memory(&SyntheticSegmentation::new(
                        config.seed,
                        size,
                        classes,
                        config.train_size,
                    )),
                    // A different stream of scenes for validation.
                    in_memory(&SyntheticSegmentation::new(
                        config.seed ^ 0x005E_ED0F_FA11,
                        size,
                        classes,
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

impl Experiment for SegmentationExperiment {
    fn run<B: AutodiffBackend>(&self, device: B::Device, backend: BackendChoice) -> RunLog {
        let config = &self.config;
        // Parameters are drawn from the backend's generator: seed it before building the model.
        B::seed(&device, config.seed);
        let model = config.model.init::<B>(&device);

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

        let classes = config.model.classes;
        let curves = CurveLogger::default();
        let training = SupervisedTraining::new(&self.output_dir, loader_train, loader_valid)
            .with_metric_logger(FileMetricLogger::new(&self.output_dir))
            .with_metric_logger(curves.clone())
            .metric_train_numeric(EpochLoss::default())
            .metric_valid_numeric(EpochLoss::default())
            .metric_train_numeric(SegmentationMetric::new(
                SegmentationStatistic::MeanIou,
                classes,
            ))
            .metric_valid_numeric(SegmentationMetric::new(
                SegmentationStatistic::MeanIou,
                classes,
            ))
            .metric_valid_numeric(SegmentationMetric::new(
                SegmentationStatistic::PixelAccuracy,
                classes,
            ))
            .num_epochs(config.epochs)
            .summary();
        let learner = Learner::new(model, config.optimizer.init(), config.learning_rate);

        let start = Instant::now();
        let result = training.launch(learner);
        let training_seconds = start.elapsed().as_secs_f64();

        let model = result.model;
        let (loss, metrics) =
            evaluate_segmentation(&model, &self.valid, config.batch_size, &device);
        RunLog {
            example: "segmentation".into(),
            backend,
            config: serde_json::to_value(config).expect("config is serialisable"),
            epochs: curves.records(),
            final_metrics: BTreeMap::from([
                ("loss".to_string(), loss),
                ("mIoU %".to_string(), 100.0 * metrics.miou),
                (
                    "pixel accuracy %".to_string(),
                    100.0 * metrics.pixel_accuracy,
                ),
                (
                    "chance mIoU %".to_string(),
                    100.0 / config.model.classes as f64,
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
        "segmentation",
        |path| config.save(path),
        |output_dir| SegmentationExperiment::new(config.clone(), output_dir),
    )
}
