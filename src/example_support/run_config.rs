//! The Burn 0.21 side of the run settings every training example shares (`RunConfig` and the
//! command-line options are Burn-free, in `burn_deterministic_vision::run::config`): the data
//! loaders they imply, and the learner's checkpointing and rendering.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::module::AutodiffModule;
use burn::optim::lr_scheduler::LrScheduler;
use burn::optim::Optimizer;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::backend::AutodiffBackend;
use burn::train::checkpoint::KeepLastNCheckpoints;
use burn::train::{InferenceStep, LearningComponentsMarker, SupervisedTraining, TrainStep};
use burn_deterministic::train::{PlainProgress, ResumableLoader};
use burn_deterministic_vision::data::SampleSource;
use burn_deterministic_vision::train::{HorizontalFlip, RandomFlip, SampleBatcher};
use std::io::IsTerminal;

pub use burn_deterministic_vision::run::config::{CommonArgs, RunConfig};
use std::sync::Arc;

/// The learner's loaders for the run settings `run`: training shuffled by the seed with the seeded flip augmentation,
/// validation in order. A run resumed after `resume_after` epochs gets the data order of the
/// uninterrupted run, and every epoch seeds the backend's generator from the seed and the
/// epoch number (dropout draws the same masks after a resume): the library's
/// `ResumableLoader`.
///
/// One loader thread (no `num_workers`): burn's multi-worker loader yields batches in the
/// order the workers finish them, which changes the data order from run to run.
#[allow(clippy::type_complexity)]
pub fn loaders<B, I, TrainBatch, ValidBatch>(
    run: &RunConfig,
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
        .batch_size(run.batch_size)
        .shuffle(run.seed)
        .set_device(device.clone())
        .build(RandomFlip {
            inner: train,
            seed: run.seed,
        });
    let loader_train = ResumableLoader::new(loader_train)
        .resume_after(resume_after.unwrap_or(0))
        .seed_backend_each_epoch(device, run.seed)
        .into_loader();
    let loader_valid = DataLoaderBuilder::<B::InnerBackend, _, _>::new(SampleBatcher)
        .batch_size(run.batch_size)
        .set_device(device.clone())
        .build(valid);
    (loader_train, loader_valid)
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

/// Reads every sample of `source` into memory.
pub fn in_memory<I: Clone + Send + Sync>(source: &dyn SampleSource<I>) -> Samples<I> {
    Arc::new(InMemDataset::new(source.all_samples()))
}
