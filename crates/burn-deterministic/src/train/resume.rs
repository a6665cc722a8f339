//! Resuming a training run with the data order and random numbers of the uninterrupted run.
//!
//! burn-train's checkpoints (`SupervisedTraining::with_file_checkpointer`, resumed with
//! `.checkpoint(epoch)`) hold the model, the optimizer state and the learning-rate scheduler.
//! Two things of a run are not in them, and Burn 0.21 offers no way to save them:
//!
//! - **The data order.** A shuffling `DataLoader` (`DataLoaderBuilder::shuffle(seed)`) draws each
//!   epoch's permutation from a generator that advances once per epoch. A resumed process starts
//!   that generator from the seed again, so epoch `k + 1` after a resume replays the order of
//!   epoch 1.
//! - **The backend's generator** (dropout masks, `Tensor::random`): `Backend::seed` can set it,
//!   nothing can read it back.
//!
//! [`ResumableLoader`] wraps the training loader and fixes both without storing any state: it
//! advances the shuffle generator past the completed epochs, and it can seed the backend at the
//! start of every epoch from the run's seed and the epoch number, so what epoch `k` draws does
//! not depend on whether the process started at epoch 1 or resumed.

use burn::data::dataloader::{DataLoader, DataLoaderIterator};
use burn::tensor::backend::Backend;
use burn_deterministic_core::training::ResumePoint;
use std::sync::Arc;

pub use burn_deterministic_core::training::epoch_seed;

/// A training `DataLoader` that gives epoch `k` the same batches, and optionally the same
/// backend random numbers, whether the run started at epoch 1 or resumed from a checkpoint.
///
/// - [`resume_after(completed)`](Self::resume_after): the first epoch this loader serves is
///   epoch `completed + 1`; before it, the wrapped loader's shuffle is advanced past the
///   `completed` epochs (each skipped epoch creates and drops an iterator of the wrapped loader:
///   with burn's single-threaded loader that is one permutation of the indices, no data is
///   read).
/// - [`seed_backend_each_epoch(device, seed)`](Self::seed_backend_each_epoch): at the start of
///   each epoch `B::seed` is called with a value mixed from `seed` and the epoch number.
///
/// Epochs are counted by the wrapped loader's `iter()` calls, one per epoch in burn-train's
/// strategies and in [`FixedOrderDataParallel`](super::FixedOrderDataParallel) (on each device's
/// share). `to_device` and `slice`, which burn-train calls before the first epoch, keep both
/// settings.
///
/// ```rust
/// # #[cfg(feature = "flex")] {
/// use burn::backend::{Autodiff, Flex};
/// use burn::data::dataloader::batcher::Batcher;
/// use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
/// use burn::data::dataset::InMemDataset;
/// use burn_deterministic::train::ResumableLoader;
/// use burn_deterministic::DeterministicBackend;
/// use std::sync::Arc;
///
/// type Train = Autodiff<DeterministicBackend<Flex>>;
///
/// /// Batches of plain numbers, to show the order.
/// #[derive(Clone)]
/// struct Numbers;
/// impl Batcher<Train, u32, Vec<u32>> for Numbers {
///     fn batch(&self, items: Vec<u32>, _: &burn::tensor::Device<Train>) -> Vec<u32> {
///         items
///     }
/// }
/// let shuffled = || -> Arc<dyn DataLoader<Train, Vec<u32>>> {
///     DataLoaderBuilder::new(Numbers)
///         .batch_size(4)
///         .shuffle(7)
///         .build(InMemDataset::new((0..8).collect()))
/// };
///
/// // An uninterrupted run: epochs 1, 2, 3.
/// let uninterrupted = shuffled();
/// let epochs: Vec<Vec<Vec<u32>>> = (0..3).map(|_| uninterrupted.iter().collect()).collect();
///
/// // A run resumed after epoch 2: the first epoch it serves is epoch 3.
/// let device = Default::default();
/// let resumed = ResumableLoader::new(shuffled())
///     .resume_after(2)
///     .seed_backend_each_epoch(&device, 7)
///     .into_loader();
/// assert_eq!(resumed.iter().collect::<Vec<_>>(), epochs[2]);
/// # }
/// ```
pub struct ResumableLoader<B: Backend, O> {
    inner: Arc<dyn DataLoader<B, O>>,
    resume: ResumePoint,
    backend_seed: Option<(B::Device, u64)>,
}

impl<B: Backend, O> ResumableLoader<B, O> {
    /// Wraps `loader`; without further settings it serves the same epochs as `loader`.
    pub fn new(loader: Arc<dyn DataLoader<B, O>>) -> Self {
        Self {
            inner: loader,
            resume: ResumePoint::after(0),
            backend_seed: None,
        }
    }

    /// The run resumes after `completed_epochs` epochs: pass the epoch given to burn-train's
    /// `SupervisedTraining::checkpoint`.
    pub fn resume_after(self, completed_epochs: usize) -> Self {
        Self {
            resume: ResumePoint::after(completed_epochs),
            ..self
        }
    }

    /// Seeds the backend of `device` at the start of every epoch with [`epoch_seed`]`(seed,
    /// epoch)`, so random ops in the training step (dropout) draw the same numbers in epoch `k`
    /// of a resumed run as in the uninterrupted one.
    pub fn seed_backend_each_epoch(self, device: &B::Device, seed: u64) -> Self {
        Self {
            backend_seed: Some((device.clone(), seed)),
            ..self
        }
    }

    /// As the `Arc<dyn DataLoader>` that burn-train's `SupervisedTraining::new` takes.
    pub fn into_loader(self) -> Arc<dyn DataLoader<B, O>>
    where
        O: 'static,
    {
        Arc::new(self)
    }

    /// The same settings around another loader (what `to_device` and `slice` return), with the
    /// backend seeded on `device`.
    fn around(&self, inner: Arc<dyn DataLoader<B, O>>, device: Option<&B::Device>) -> Self {
        Self {
            inner,
            resume: self.resume.clone(),
            backend_seed: self
                .backend_seed
                .as_ref()
                .map(|(own, seed)| (device.unwrap_or(own).clone(), *seed)),
        }
    }
}

impl<B: Backend, O: 'static> DataLoader<B, O> for ResumableLoader<B, O> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<O> + 'a> {
        let start = self.resume.begin_epoch();
        for _ in 0..start.skip {
            drop(self.inner.iter());
        }
        if let Some((device, seed)) = &self.backend_seed {
            B::seed(device, epoch_seed(*seed, start.epoch));
        }
        self.inner.iter()
    }

    fn num_items(&self) -> usize {
        self.inner.num_items()
    }

    fn to_device(&self, device: &B::Device) -> Arc<dyn DataLoader<B, O>> {
        Arc::new(self.around(self.inner.to_device(device), Some(device)))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<B, O>> {
        Arc::new(self.around(self.inner.slice(start, end), None))
    }
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use burn::data::dataloader::batcher::Batcher;
    use burn::data::dataloader::DataLoaderBuilder;
    use burn::data::dataset::InMemDataset;
    use burn::tensor::{Distribution, Tensor, TensorData};

    #[derive(Clone)]
    struct Values;
    impl Batcher<Flex, f32, Vec<f32>> for Values {
        fn batch(&self, items: Vec<f32>, _: &burn::tensor::Device<Flex>) -> Vec<f32> {
            items
        }
    }

    fn shuffled(seed: u64) -> Arc<dyn DataLoader<Flex, Vec<f32>>> {
        DataLoaderBuilder::new(Values)
            .batch_size(3)
            .shuffle(seed)
            .build(InMemDataset::new((0..12).map(|i| i as f32).collect()))
    }

    /// One epoch as burn-train runs it: the batches, then a random draw inside the step.
    fn epoch(loader: &dyn DataLoader<Flex, Vec<f32>>) -> (Vec<Vec<f32>>, TensorData) {
        let batches = loader.iter().collect();
        let device = Default::default();
        let noise = Tensor::<Flex, 1>::random([4], Distribution::Default, &device).into_data();
        (batches, noise)
    }

    /// Epochs 3 and 4 of a run resumed after 2 (burn-train moves the loader to the device
    /// first) equal those of an uninterrupted run, data and random numbers; the plain loader
    /// of a resumed process (the negative control) replays epoch 1's order instead.
    #[test]
    fn a_resumed_run_sees_the_epochs_of_the_uninterrupted_run() {
        let device = Default::default();
        let wrap = |completed| {
            ResumableLoader::new(shuffled(11))
                .resume_after(completed)
                .seed_backend_each_epoch(&device, 5)
                .into_loader()
                .to_device(&device)
        };
        let uninterrupted = wrap(0);
        let all: Vec<_> = (0..4).map(|_| epoch(uninterrupted.as_ref())).collect();
        let resumed = wrap(2);
        let tail: Vec<_> = (0..2).map(|_| epoch(resumed.as_ref())).collect();
        assert_eq!(tail, all[2..]);
        // Every epoch has its own order and its own random numbers.
        assert_ne!(all[0].0, all[2].0);
        assert_ne!(all[0].1, all[2].1);

        let plain = shuffled(11).to_device(&device);
        Flex::seed(&device, 5);
        assert_ne!(
            epoch(plain.as_ref()).0,
            all[2].0,
            "the plain loader restarts"
        );
    }

    /// Each device's share of data-parallel training (`slice`) is resumed too.
    #[test]
    fn slices_keep_the_resume_point() {
        let uninterrupted = ResumableLoader::new(shuffled(3)).into_loader().slice(0, 6);
        let all: Vec<Vec<Vec<f32>>> = (0..3).map(|_| uninterrupted.iter().collect()).collect();
        let resumed = ResumableLoader::new(shuffled(3))
            .resume_after(2)
            .into_loader()
            .slice(0, 6);
        assert_eq!(resumed.iter().collect::<Vec<_>>(), all[2]);
        assert_eq!(resumed.num_items(), 6);
    }
}
