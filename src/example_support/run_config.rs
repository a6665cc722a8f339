//! The run settings every training example shares (nested as `run` in each example's Burn
//! `Config`), their command-line options, and the data loaders they imply.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::AutodiffModule;
use burn::optim::lr_scheduler::LrScheduler;
use burn::optim::Optimizer;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::backend::AutodiffBackend;
use burn::train::checkpoint::KeepLastNCheckpoints;
use burn::train::{InferenceStep, LearningComponentsMarker, SupervisedTraining, TrainStep};
use burn_deterministic::train::{PlainProgress, ResumableLoader};
use burn_deterministic_vision::train::{HorizontalFlip, RandomFlip, SampleBatcher};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use crate::example_support::devices::BackendChoice;

/// The run settings every training example shares, nested as `run` in each example's Burn
/// `Config` (and so in its `config.json`).
#[derive(burn::config::Config, Debug)]
pub struct RunConfig {
    #[config(default = 10)]
    pub epochs: usize,
    #[config(default = 8)]
    pub batch_size: usize,
    /// Side of the square synthetic images (a multiple of 8).
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

    /// The learner's loaders: training shuffled by the seed with the seeded flip augmentation,
    /// validation in order. A run resumed after `resume_after` epochs gets the data order of the
    /// uninterrupted run, and every epoch seeds the backend's generator from the seed and the
    /// epoch number (dropout draws the same masks after a resume): the library's
    /// `ResumableLoader`.
    ///
    /// One loader thread (no `num_workers`): burn's multi-worker loader yields batches in the
    /// order the workers finish them, which changes the data order from run to run.
    #[allow(clippy::type_complexity)]
    pub fn loaders<B, I, TrainBatch, ValidBatch>(
        &self,
        train: Samples<I>,
        valid: Samples<I>,
        device: &B::Device,
        resume_after: Option<usize>,
    ) -> (
        Arc<dyn DataLoader<B, TrainBatch>>,
        Arc<dyn DataLoader<B::InnerBackend, ValidBatch>>,
    )
    where
        B: AutodiffBackend,
        I: HorizontalFlip + Clone + std::fmt::Debug + Send + Sync + 'static,
        SampleBatcher: Batcher<B, I, TrainBatch> + Batcher<B::InnerBackend, I, ValidBatch>,
        TrainBatch: Clone + std::fmt::Debug + Send + 'static,
        ValidBatch: Clone + std::fmt::Debug + Send + 'static,
    {
        let loader_train = DataLoaderBuilder::<B, _, _>::new(SampleBatcher)
            .batch_size(self.batch_size)
            .shuffle(self.seed)
            .set_device(device.clone())
            .build(RandomFlip {
                inner: train,
                seed: self.seed,
            });
        let loader_train = ResumableLoader::new(loader_train)
            .resume_after(resume_after.unwrap_or(0))
            .seed_backend_each_epoch(device, self.seed)
            .into_loader();
        let loader_valid = DataLoaderBuilder::<B::InnerBackend, _, _>::new(SampleBatcher)
            .batch_size(self.batch_size)
            .set_device(device.clone())
            .build(valid);
        (loader_train, loader_valid)
    }
}

/// What both training examples add to their `SupervisedTraining`: checkpoints of the last two
/// epochs in full precision (`CompactRecorder`, the usual choice, stores half floats, and a
/// resumed run would not continue from the same bits), the epoch to resume after, and without
/// a terminal (a log, a file) the library's `PlainProgress` instead of burn-train's dashboard.
pub fn checkpointed_and_rendered<B, LR, M, O>(
    training: SupervisedTraining<LearningComponentsMarker<B, LR, M, O>>,
    resume_after: Option<usize>,
) -> SupervisedTraining<LearningComponentsMarker<B, LR, M, O>>
where
    B: AutodiffBackend,
    LR: LrScheduler + 'static,
    M: TrainStep + AutodiffModule<B> + core::fmt::Display + 'static,
    M::InnerModule: InferenceStep,
    O: Optimizer<M, B> + 'static,
{
    let training = training
        .with_file_checkpointer(NamedMpkFileRecorder::<FullPrecisionSettings>::new())
        .with_checkpointing_strategy(KeepLastNCheckpoints::new(2));
    let training = match resume_after {
        Some(epoch) => training.checkpoint(epoch),
        None => training,
    };
    if std::io::stdout().is_terminal() {
        training
    } else {
        training.renderer(PlainProgress::new())
    }
}

/// Samples held in memory, shared by the learner's two loaders.
pub type Samples<I> = Arc<InMemDataset<I>>;

/// Reads every item of `data` into memory.
pub fn in_memory<I: Clone + Send + Sync>(data: &dyn Dataset<I>) -> Samples<I> {
    Arc::new(InMemDataset::new(
        (0..data.len()).filter_map(|i| data.get(i)).collect(),
    ))
}

/// Command-line options shared by the training examples. Options left out keep the value of the
/// example's Burn `Config` (its defaults, or the file given with `--config`).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Inner backend wrapped by the decorator (each needs its cargo feature).
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
    /// Seeds parameters (`B::seed`), data generation, shuffling and augmentation.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Train on a folder of PNGs instead (DIR/train and DIR/valid; see the README).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Where the config, log.json, curves.png and burn-train's logs go.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Train twice, in two new processes, and exit with status 1 unless the parameter hashes of
    /// the two runs are identical.
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
}
