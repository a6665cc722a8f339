//! Resuming a training run with the data order and random numbers of the uninterrupted run.
//!
//! burn-train's checkpoints (`SupervisedTraining::with_file_checkpointer`, resumed with
//! `.checkpoint(epoch)`) hold the model, the optimizer state and the learning-rate scheduler.
//! Two things of a run are not in them, and Burn 0.22.1 offers no way to save them:
//!
//! - **The data order.** A shuffling `DataLoader` (`DataLoaderBuilder::shuffle(seed)`) draws each
//!   epoch's permutation from a generator that advances once per epoch. A resumed process starts
//!   that generator from the seed again, so epoch `k + 1` after a resume replays the order of
//!   epoch 1.
//! - **The device's generator** (dropout masks, `Tensor::random`): `Device::seed` can set it,
//!   nothing can read it back.
//!
//! [`ResumableLoader`] wraps the training loader and fixes both without storing any state: it
//! advances the shuffle generator past the completed epochs, and it can seed the device at the
//! start of every epoch from the run's seed and the epoch number, so what epoch `k` draws does
//! not depend on whether the process started at epoch 1 or resumed.

use burn::data::dataloader::{DataLoader, DataLoaderIterator};
use burn::tensor::Device;
use burn_deterministic_core::training::ResumePoint;
use std::sync::Arc;

pub use burn_deterministic_core::training::epoch_seed;

/// A training `DataLoader` that gives epoch `k` the same batches, and optionally the same
/// random numbers, whether the run started at epoch 1 or resumed from a checkpoint.
///
/// - [`resume_after(completed)`](Self::resume_after): the first epoch this loader serves is
///   epoch `completed + 1`; before it, the wrapped loader's shuffle is advanced past the
///   `completed` epochs (each skipped epoch creates and drops an iterator of the wrapped loader:
///   with burn's single-threaded loader that is one permutation of the indices, no data is
///   read).
/// - [`seed_device_each_epoch(device, seed)`](Self::seed_device_each_epoch): at the start of
///   each epoch `Device::seed` is called with [`epoch_seed`]`(seed, epoch)`.
///
/// Epochs are counted by the wrapped loader's `iter()` calls, one per epoch in burn-train's
/// strategies and in [`FixedOrderDataParallel`](super::FixedOrderDataParallel) (on each device's
/// share). `to_device` and `slice`, which burn-train calls before the first epoch, keep both
/// settings.
///
/// ```rust
/// use burn::data::dataloader::batcher::Batcher;
/// use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
/// use burn::data::dataset::InMemDataset;
/// use burn::tensor::Device;
/// use burn_deterministic_tensor::train::ResumableLoader;
/// use std::sync::Arc;
///
/// /// Batches of plain numbers, to show the order.
/// #[derive(Clone)]
/// struct Numbers;
/// impl Batcher<u32, Vec<u32>> for Numbers {
///     fn batch(&self, items: Vec<u32>, _: &Device) -> Vec<u32> {
///         items
///     }
/// }
/// let shuffled = || -> Arc<dyn DataLoader<Vec<u32>>> {
///     DataLoaderBuilder::new(Numbers)
///         .batch_size(4)
///         .shuffle(7)
///         .build(InMemDataset::new((0..8).collect()))
/// };
/// let epoch = |loader: &dyn DataLoader<Vec<u32>>| -> Vec<Vec<u32>> {
///     loader.iter().map(|batch| batch.unwrap()).collect()
/// };
///
/// // An uninterrupted run: epochs 1, 2, 3.
/// let uninterrupted = shuffled();
/// let epochs: Vec<_> = (0..3).map(|_| epoch(uninterrupted.as_ref())).collect();
///
/// // A run resumed after epoch 2: the first epoch it serves is epoch 3.
/// let resumed = ResumableLoader::new(shuffled())
///     .resume_after(2)
///     .seed_device_each_epoch(&Device::flex(), 7)
///     .into_loader();
/// assert_eq!(epoch(resumed.as_ref()), epochs[2]);
/// ```
pub struct ResumableLoader<O> {
    inner: Arc<dyn DataLoader<O>>,
    resume: ResumePoint,
    device_seed: Option<(Device, u64)>,
}

impl<O> ResumableLoader<O> {
    /// Wraps `loader`; without further settings it serves the same epochs as `loader`.
    pub fn new(loader: Arc<dyn DataLoader<O>>) -> Self {
        Self {
            inner: loader,
            resume: ResumePoint::after(0),
            device_seed: None,
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

    /// Seeds `device` at the start of every epoch with [`epoch_seed`]`(seed, epoch)`, so random
    /// ops in the training step (dropout) draw the same numbers in epoch `k` of a resumed run as
    /// in the uninterrupted one.
    pub fn seed_device_each_epoch(self, device: &Device, seed: u64) -> Self {
        Self {
            device_seed: Some((device.clone(), seed)),
            ..self
        }
    }

    /// As the `Arc<dyn DataLoader>` that burn-train's `SupervisedTraining::new` takes.
    pub fn into_loader(self) -> Arc<dyn DataLoader<O>>
    where
        O: 'static,
    {
        Arc::new(self)
    }

    /// The same settings around another loader (what `to_device` and `slice` return), with the
    /// device seeded being `device` where one is given.
    fn around(&self, inner: Arc<dyn DataLoader<O>>, device: Option<&Device>) -> Self {
        Self {
            inner,
            resume: self.resume.clone(),
            device_seed: self
                .device_seed
                .as_ref()
                .map(|(own, seed)| (device.unwrap_or(own).clone(), *seed)),
        }
    }
}

impl<O: 'static> DataLoader<O> for ResumableLoader<O> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<O> + 'a> {
        let start = self.resume.begin_epoch();
        for _ in 0..start.skip {
            drop(self.inner.iter());
        }
        if let Some((device, seed)) = &self.device_seed {
            device.seed(epoch_seed(*seed, start.epoch));
        }
        self.inner.iter()
    }

    fn num_items(&self) -> usize {
        self.inner.num_items()
    }

    fn to_device(&self, device: &Device) -> Arc<dyn DataLoader<O>> {
        Arc::new(self.around(self.inner.to_device(device), Some(device)))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<O>> {
        Arc::new(self.around(self.inner.slice(start, end), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::data::dataloader::batcher::Batcher;
    use burn::data::dataloader::DataLoaderBuilder;
    use burn::data::dataset::InMemDataset;
    use burn::tensor::{Distribution, Tensor, TensorData};

    #[derive(Clone)]
    struct Values;
    impl Batcher<f32, Vec<f32>> for Values {
        fn batch(&self, items: Vec<f32>, _: &Device) -> Vec<f32> {
            items
        }
    }

    fn shuffled(seed: u64) -> Arc<dyn DataLoader<Vec<f32>>> {
        DataLoaderBuilder::new(Values)
            .batch_size(3)
            .shuffle(seed)
            .build(InMemDataset::new((0..12).map(|i| i as f32).collect()))
    }

    /// One epoch as burn-train runs it: the batches, then a random draw inside the step.
    fn epoch(loader: &dyn DataLoader<Vec<f32>>) -> (Vec<Vec<f32>>, TensorData) {
        let batches = loader.iter().map(|batch| batch.unwrap()).collect();
        let noise = Tensor::<1>::random([4], Distribution::Default, &Device::flex()).into_data();
        (batches, noise)
    }

    /// Epochs 3 and 4 of a run resumed after 2 (burn-train moves the loader to the device
    /// first) equal those of an uninterrupted run, data and random numbers; the plain loader
    /// of a resumed process (the negative control) replays epoch 1's order instead.
    #[test]
    fn a_resumed_run_sees_the_epochs_of_the_uninterrupted_run() {
        let device = Device::flex();
        let wrap = |completed| {
            ResumableLoader::new(shuffled(11))
                .resume_after(completed)
                .seed_device_each_epoch(&device, 5)
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
        device.seed(5);
        assert_ne!(
            epoch(plain.as_ref()).0,
            all[2].0,
            "the plain loader restarts"
        );
    }

    /// Each device's share of data-parallel training (`slice`) is resumed too.
    #[test]
    fn slices_keep_the_resume_point() {
        let epochs = |loader: Arc<dyn DataLoader<Vec<f32>>>, count| -> Vec<Vec<Vec<f32>>> {
            (0..count)
                .map(|_| loader.iter().map(|batch| batch.unwrap()).collect())
                .collect()
        };
        let uninterrupted = ResumableLoader::new(shuffled(3)).into_loader().slice(0, 6);
        let all = epochs(uninterrupted, 3);
        let resumed = ResumableLoader::new(shuffled(3))
            .resume_after(2)
            .into_loader()
            .slice(0, 6);
        assert_eq!(resumed.num_items(), 6);
        assert_eq!(epochs(resumed, 1)[0], all[2]);
    }
}
