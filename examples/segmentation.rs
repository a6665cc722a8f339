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
use burn_deterministic_vision::data::{SegmentationSample, SyntheticSegmentation};
use burn_deterministic_vision::folder::SegmentationFolder;
use burn_deterministic_vision::models::SegmentationConfig;
use burn_deterministic_vision::train::{
    evaluate_segmentation, EpochLoss, SegmentationMetric, SegmentationStatistic,
};
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Everything that determines a run (saved as `config.json` next to the results).
#[derive(Config, Debug)]
pub struct SegmentationTrainingConfig {
    pub model: SegmentationConfig,
    pub optimizer: AdamConfig,
    pub run: RunConfig,
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
        let mut config = match &self.common.config {
            Some(path) => SegmentationTrainingConfig::load(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?,
            None => SegmentationTrainingConfig::new(
                SegmentationConfig::new(),
                AdamConfig::new(),
                RunConfig::new(),
            ),
        };
        config.run.apply(&self.common)?;
        config.model.classes = self.classes.unwrap_or(config.model.classes);
        if config.model.classes < 2 {
            return Err("--classes must be at least 2".into());
        }
        Ok(config)
    }
}

type Data = Samples<SegmentationSample>;

struct SegmentationExperiment {
    config: SegmentationTrainingConfig,
    train: Data,
    valid: Data,
    output_dir: PathBuf,
}

impl SegmentationExperiment {
    fn new(config: SegmentationTrainingConfig, output_dir: PathBuf) -> Result<Self, String> {
        let run = &config.run;
        let (train, valid): (Data, Data) = match &run.data_dir {
            Some(dir) => {
                let open = |split: &str| {
                    SegmentationFolder::open(PathBuf::from(dir).join(split), config.model.classes)
                        .map_err(|e| e.to_string())
                };
                (in_memory(&open("train")?), in_memory(&open("valid")?))
            }
            None => {
                let size = [run.image_size; 2];
                let classes = config.model.classes;
                (
                    in_memory(&SyntheticSegmentation::new(
                        run.seed,
                        size,
                        classes,
                        run.train_size,
                    )),
                    in_memory(&SyntheticSegmentation::new(
                        run.validation_seed(),
                        size,
                        classes,
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

impl Experiment for SegmentationExperiment {
    fn run<B: AutodiffBackend>(&self, devices: Vec<B::Device>, backend: BackendChoice) -> RunLog {
        let (config, run) = (&self.config, &self.config.run);
        let device = devices[0].clone();
        let device_count = devices.len();
        // Parameters are drawn from the backend's generator: seed it before building the model.
        B::seed(&device, run.seed);
        let model = config.model.init::<B>(&device);
        let (loader_train, loader_valid) =
            run.loaders::<B, _, _, _>(self.train.clone(), self.valid.clone(), &device);

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
            .with_training_strategy(training_strategy(devices))
            .num_epochs(run.epochs)
            .summary();
        let learner = Learner::new(model, config.optimizer.init(), run.learning_rate);

        let start = Instant::now();
        let result = training.launch(learner);
        let training_seconds = start.elapsed().as_secs_f64();

        let model = result.model;
        let (loss, metrics) = evaluate_segmentation(&model, &self.valid, run.batch_size, &device);
        RunLog {
            example: "segmentation".into(),
            backend,
            devices: device_count,
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
