//! Data-parallel training on several devices with a fixed gradient-reduction order, as a
//! burn-train custom learning strategy.
//!
//! Why not burn-train's own `MultiDevice` strategy: it sums the workers' gradients in the order
//! the workers *finish* (its `MultiDevicesTrainStep` reads one shared channel). Floating-point
//! addition is commutative but not associative, so with three or more devices the summed
//! gradients — and everything trained from them — may differ in the last bits from run to run.
//! This strategy does the same work (one batch per device per step, gradients moved to the first
//! device, one optimizer step there, validation on the first device) but collects the gradients
//! by device index and sums them as `((g₀ + g₁) + g₂) + …`, whatever finishes first.
//!
//! Kept to the same shape as burn-train 0.21's `MultiDeviceLearningStrategy`
//! (`OptimMainDevice`): same data split (`split_dataloader`), same learning-rate stepping (once
//! per step), same events, checkpoints and early stopping. With two devices the two orders give
//! the same sum (two terms commute).

use burn::data::dataloader::split::split_dataloader;
use burn::data::dataloader::Progress;
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsAccumulator;
use burn::tensor::backend::DeviceOps;
use burn::tensor::Device;
use burn::train::{
    EventProcessorTraining, InferenceStep, Interrupter, Learner, LearnerEvent,
    LearningComponentsTypes, SupervisedLearningStrategy, SupervisedTrainingEventProcessor,
    TrainLoader, TrainStep, TrainingBackend, TrainingComponents, TrainingItem, TrainingModel,
    ValidLoader,
};

/// Data-parallel training over `devices` (the first is the main device) with gradients summed in
/// device order: burn-train's `MultiDevice` strategy, made reproducible for three devices or
/// more. Pass it to `SupervisedTraining::with_training_strategy` as a custom strategy.
///
/// ```rust
/// use burn::tensor::Device;
/// use burn::train::{LearningComponentsTypes, TrainingBackend, TrainingStrategy};
/// use burn_deterministic::train::FixedOrderDataParallel;
/// use std::sync::Arc;
///
/// /// The strategy for `SupervisedTraining::with_training_strategy`.
/// fn data_parallel<LC: LearningComponentsTypes + 'static>(
///     devices: Vec<Device<TrainingBackend<LC>>>,
/// ) -> TrainingStrategy<LC> {
///     TrainingStrategy::Custom(Arc::new(FixedOrderDataParallel::new(devices)))
/// }
/// ```
pub struct FixedOrderDataParallel<LC: LearningComponentsTypes> {
    devices: Vec<Device<TrainingBackend<LC>>>,
}

impl<LC: LearningComponentsTypes> FixedOrderDataParallel<LC> {
    /// # Panics
    /// If `devices` is empty.
    pub fn new(devices: Vec<Device<TrainingBackend<LC>>>) -> Self {
        assert!(!devices.is_empty(), "data-parallel training needs a device");
        Self { devices }
    }

    fn main_device(&self) -> &Device<TrainingBackend<LC>> {
        &self.devices[0]
    }

    /// One epoch: every step takes the next batch of each device's share of the data, computes
    /// the gradients on all devices concurrently, sums them on the main device in device order
    /// and steps the optimizer.
    fn train_epoch(
        &self,
        loaders: &[TrainLoader<LC>],
        learner: &mut Learner<LC>,
        epoch_progress: &Progress,
        grad_accumulation: usize,
        events: &mut SupervisedTrainingEventProcessor<LC>,
        interrupter: &Interrupter,
    ) {
        let epoch = epoch_progress.items_processed;
        let mut iterators: Vec<_> = loaders.iter().map(|loader| loader.iter()).collect();
        let mut accumulator = GradientsAccumulator::new();
        let mut accumulated = 0;
        let mut iteration = 0;
        loop {
            let mut work = Vec::with_capacity(self.devices.len());
            let (mut items_processed, mut items_total) = (0, 0);
            for (device, iterator) in self.devices.iter().zip(iterators.iter_mut()) {
                if let Some(batch) = iterator.next() {
                    let progress = iterator.progress();
                    items_processed += progress.items_processed;
                    items_total += progress.items_total;
                    work.push((device.clone(), batch));
                }
            }
            if work.is_empty() {
                break;
            }
            let progress = Progress::new(items_processed, items_total);
            learner.lr_step();

            let model = learner.model();
            // One scoped thread per device; joining in spawn order is what fixes the order of
            // the sum below.
            let outputs: Vec<_> = std::thread::scope(|scope| {
                let workers: Vec<_> = work
                    .into_iter()
                    .map(|(device, batch)| {
                        let model = model.clone();
                        scope.spawn(move || model.fork(&device).step(batch))
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|worker| {
                        // A worker's panic is the training step's own: passed on unchanged.
                        worker
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            });

            let mut step_items = Vec::with_capacity(outputs.len());
            for output in outputs {
                let grads = output.grads.to_device(self.main_device(), &model);
                accumulator.accumulate(&model, grads);
                step_items.push(output.item);
            }
            accumulated += 1;
            if accumulated >= grad_accumulation {
                learner.optimizer_step(accumulator.grads());
                accumulated = 0;
            }

            for item in step_items {
                iteration += 1;
                events.process_train(LearnerEvent::ProcessedItem(TrainingItem::new(
                    item,
                    progress.clone(),
                    epoch_progress.clone(),
                    Some(iteration),
                    Some(learner.lr_current()),
                )));
            }
            if interrupter.should_stop() {
                break;
            }
        }
        events.process_train(LearnerEvent::EndEpoch(epoch));
    }
}

/// Validation on the main device, as burn-train's strategies do it.
fn valid_epoch<LC: LearningComponentsTypes>(
    loader: &ValidLoader<LC>,
    learner: &Learner<LC>,
    epoch_progress: &Progress,
    events: &mut SupervisedTrainingEventProcessor<LC>,
    interrupter: &Interrupter,
) {
    let model = learner.model().valid();
    let mut iterator = loader.iter();
    let mut iteration = 0;
    while let Some(batch) = iterator.next() {
        let progress = iterator.progress();
        iteration += 1;
        let item = model.step(batch);
        events.process_valid(LearnerEvent::ProcessedItem(TrainingItem::new(
            item,
            progress,
            epoch_progress.clone(),
            Some(iteration),
            None,
        )));
        if interrupter.should_stop() {
            break;
        }
    }
    events.process_valid(LearnerEvent::EndEpoch(epoch_progress.items_processed));
}

impl<LC: LearningComponentsTypes> SupervisedLearningStrategy<LC> for FixedOrderDataParallel<LC> {
    fn fit(
        &self,
        components: TrainingComponents<LC>,
        mut learner: Learner<LC>,
        dataloader_train: TrainLoader<LC>,
        dataloader_valid: ValidLoader<LC>,
        starting_epoch: usize,
    ) -> (TrainingModel<LC>, SupervisedTrainingEventProcessor<LC>) {
        // Each device's loader yields batches already on that device.
        let loaders = split_dataloader(dataloader_train, &self.devices);
        let dataloader_valid = dataloader_valid.to_device(self.main_device().inner());
        learner.fork(self.main_device());
        let mut events = components.event_processor;
        let mut checkpointer = components.checkpointer;
        let mut early_stopping = components.early_stopping;
        let grad_accumulation = components.grad_accumulation.unwrap_or(1);

        for epoch in starting_epoch..=components.num_epochs {
            let epoch_progress = Progress::new(epoch, components.num_epochs);
            self.train_epoch(
                &loaders,
                &mut learner,
                &epoch_progress,
                grad_accumulation,
                &mut events,
                &components.interrupter,
            );
            if components.interrupter.should_stop() {
                break;
            }
            valid_epoch(
                &dataloader_valid,
                &learner,
                &epoch_progress,
                &mut events,
                &components.interrupter,
            );
            if let Some(checkpointer) = &mut checkpointer {
                checkpointer.checkpoint(&learner, epoch, &components.event_store);
            }
            if let Some(early_stopping) = &mut early_stopping {
                if early_stopping.should_stop(epoch, &components.event_store) {
                    break;
                }
            }
        }
        (learner.model(), events)
    }
}
