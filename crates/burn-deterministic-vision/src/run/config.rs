//! The run settings every training example shares (nested as `run` in each example's Burn
//! `Config`, so in its `config.json`), their command-line options, and the samples they name.

use crate::data::{
    DepthSample, SampleSource, SegmentationSample, SyntheticDepth, SyntheticSegmentation,
};
use crate::folder::{DepthFolder, SegmentationFolder};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The backend a training example runs on, each behind a cargo feature of its build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// burn-ndarray on the CPU.
    Ndarray,
    /// burn-flex on the CPU.
    Flex,
    /// wgpu, pinned to the Vulkan API.
    Wgpu,
    /// CUDA.
    Cuda,
}

impl BackendChoice {
    /// The name on the command line and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ndarray => "ndarray",
            Self::Flex => "flex",
            Self::Wgpu => "wgpu",
            Self::Cuda => "cuda",
        }
    }

    /// The error for a backend this build of the example cannot run.
    pub fn missing_feature(self) -> String {
        format!(
            "backend {0} needs the cargo feature `{0}` (add `--features {0}`)",
            self.name()
        )
    }
}

/// How the gradients of several `--devices` are combined each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DataParallel {
    /// The crate's `FixedOrderDataParallel`: summed on the first device in device order, the
    /// same bits every run.
    FixedOrder,
    /// burn-train's own `MultiDevice` strategy, for comparison: summed in the order the workers
    /// finish, so with three or more devices the bits can change from run to run (a
    /// `--check-determinism` of it fails and says where the runs first differ).
    BurnTrain,
}

/// The run settings every training example shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfig {
    pub epochs: usize,
    pub batch_size: usize,
    /// Side of the square synthetic images (a multiple of 8).
    pub image_size: usize,
    pub train_size: usize,
    pub valid_size: usize,
    pub learning_rate: f64,
    pub seed: u64,
    /// A folder with `train/` and `valid/` subfolders of PNGs instead of synthetic data.
    pub data_dir: Option<String>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            epochs: 10,
            batch_size: 8,
            image_size: 64,
            train_size: 256,
            valid_size: 64,
            learning_rate: 3e-3,
            seed: 42,
            data_dir: None,
        }
    }
}

impl RunConfig {
    /// Applies the command-line options that were given, then checks the result.
    pub fn apply(&mut self, args: &CommonArgs) -> Result<(), String> {
        self.epochs = args.epochs.unwrap_or(self.epochs);
        self.batch_size = args.batch_size.unwrap_or(self.batch_size);
        self.image_size = args.image_size.unwrap_or(self.image_size);
        self.train_size = args.train_size.unwrap_or(self.train_size);
        self.valid_size = args.valid_size.unwrap_or(self.valid_size);
        self.learning_rate = args.learning_rate.unwrap_or(self.learning_rate);
        self.seed = args.seed.unwrap_or(self.seed);
        if let Some(dir) = &args.data_dir {
            self.data_dir = Some(dir.display().to_string());
        }
        if self.image_size == 0 || !self.image_size.is_multiple_of(8) {
            return Err(format!(
                "--image-size must be a positive multiple of 8, got {}",
                self.image_size
            ));
        }
        if self.batch_size == 0 || self.epochs == 0 {
            return Err("--batch-size and --epochs must be positive".into());
        }
        if args.data_parallel != DataParallel::FixedOrder && args.devices < 2 {
            return Err(
                "--data-parallel chooses how the gradients of several devices are combined: \
                 give --devices 2 or more"
                    .into(),
            );
        }
        if let Some(completed) = args.resume {
            if completed == 0 || completed >= self.epochs {
                return Err(format!(
                    "--resume {completed}: the epoch to resume after must be between 1 and \
                     --epochs - 1 ({})",
                    self.epochs - 1
                ));
            }
            if args.check_determinism {
                return Err(
                    "--resume cannot be combined with --check-determinism (its runs \
                            start from scratch in folders of their own)"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// Seed of the synthetic validation scenes: a different stream than the training scenes.
    pub fn validation_seed(&self) -> u64 {
        self.seed ^ 0x005E_ED0F_FA11
    }
}

/// Command-line options shared by the training examples. Options left out keep the value of the
/// example's Burn `Config` (its defaults, or the file given with `--config`).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// The backend to train on (each needs its cargo feature).
    #[arg(long, value_enum, default_value_t = BackendChoice::Flex)]
    pub backend: BackendChoice,
    /// Start from a saved config (JSON, as written to OUTPUT_DIR/config.json).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub epochs: Option<usize>,
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Side of the square synthetic images (a multiple of 8).
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Number of synthetic training images.
    #[arg(long)]
    pub train_size: Option<usize>,
    /// Number of synthetic validation images.
    #[arg(long)]
    pub valid_size: Option<usize>,
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// Seeds parameters, data generation, shuffling and augmentation.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Train on a folder of PNGs instead (DIR/train and DIR/valid; see the README).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Where the config, log.json, curves.png and burn-train's logs go.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Train twice, in two new processes, and exit with status 1 unless the parameter hashes of
    /// the two runs are identical (then it names the first step and parameter that differed).
    #[arg(long)]
    pub check_determinism: bool,
    /// Resume a run of the same OUTPUT_DIR after this epoch, from burn-train's checkpoint
    /// (model, optimizer and scheduler; the last two epochs' are kept), with the data order and
    /// random numbers of the uninterrupted run: the parameters come out bit-identical.
    #[arg(long, value_name = "EPOCH")]
    pub resume: Option<usize>,
    /// Train data-parallel on this many devices of the backend: every device takes its own
    /// batch each step, gradients are summed on the first in device order (the same bits every
    /// run). CUDA takes GPUs 0..N; CPU backends run one worker thread per "device" on the one
    /// CPU device; wgpu cannot (see the README).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub devices: u16,
    /// How the gradients of several --devices are combined: in device order, or, for
    /// comparison, burn-train's own strategy (in the order the workers finish).
    #[arg(long, value_enum, default_value_t = DataParallel::FixedOrder)]
    pub data_parallel: DataParallel,
}

/// The segmentation examples' own options.
#[derive(Debug, Clone, clap::Args)]
pub struct SegmentationOptions {
    /// Number of classes, background included (synthetic data: shape kinds and colours).
    #[arg(long)]
    pub classes: Option<usize>,
    /// Dropout probability before the main head (its masks come from the backend's generator).
    #[arg(long)]
    pub dropout: Option<f64>,
}

impl SegmentationOptions {
    /// Applies the options given to a model config's `classes` and `dropout`, then checks them.
    pub fn apply(&self, classes: &mut usize, dropout: &mut f64) -> Result<(), String> {
        *classes = self.classes.unwrap_or(*classes);
        *dropout = self.dropout.unwrap_or(*dropout);
        if !(0.0..1.0).contains(dropout) {
            return Err(format!("--dropout must be in [0, 1), got {dropout}"));
        }
        if *classes < 2 {
            return Err("--classes must be at least 2".into());
        }
        Ok(())
    }
}

/// The depth examples' own options.
#[derive(Debug, Clone, clap::Args)]
pub struct DepthOptions {
    /// PNG depth value per metre, for --data-dir.
    #[arg(long)]
    pub depth_scale: Option<f32>,
}

/// The training and validation samples of a segmentation run: the PNG folders
/// `run.data_dir/{train,valid}`, else seeded synthetic scenes of `classes` classes.
pub fn segmentation_splits(
    run: &RunConfig,
    classes: usize,
) -> Result<[Box<dyn SampleSource<SegmentationSample>>; 2], String> {
    if let Some(dir) = &run.data_dir {
        let open = |split: &str| -> Result<Box<dyn SampleSource<SegmentationSample>>, String> {
            let folder = SegmentationFolder::open(PathBuf::from(dir).join(split), classes)
                .map_err(|e| e.to_string())?;
            Ok(Box::new(folder))
        };
        return Ok([open("train")?, open("valid")?]);
    }
    let synthetic = |seed, count| -> Box<dyn SampleSource<SegmentationSample>> {
        Box::new(SyntheticSegmentation::new(
            seed,
            [run.image_size; 2],
            classes,
            count,
        ))
    };
    Ok([
        synthetic(run.seed, run.train_size),
        synthetic(run.validation_seed(), run.valid_size),
    ])
}

/// The training and validation samples of a depth run: the PNG folders
/// `run.data_dir/{train,valid}` (depth in PNG units of `depth_scale` per metre), else seeded
/// synthetic scenes.
pub fn depth_splits(
    run: &RunConfig,
    depth_scale: f32,
) -> Result<[Box<dyn SampleSource<DepthSample>>; 2], String> {
    if let Some(dir) = &run.data_dir {
        let open = |split: &str| -> Result<Box<dyn SampleSource<DepthSample>>, String> {
            let folder = DepthFolder::open(PathBuf::from(dir).join(split), depth_scale)
                .map_err(|e| e.to_string())?;
            Ok(Box::new(folder))
        };
        return Ok([open("train")?, open("valid")?]);
    }
    let synthetic = |seed, count| -> Box<dyn SampleSource<DepthSample>> {
        Box::new(SyntheticDepth::new(seed, [run.image_size; 2], count))
    };
    Ok([
        synthetic(run.seed, run.train_size),
        synthetic(run.validation_seed(), run.valid_size),
    ])
}
