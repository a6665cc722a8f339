//! Data-parallel training on several devices with a fixed gradient-reduction order, as a
//! burn-train custom learning strategy.
//!
//! Why not burn-train 0.22.1's own `MultiDevice` strategy: its `MultiDevicesTrainStep` still
//! collects the workers' outputs from one shared channel, in the order the workers *finish*, and
//! `run_optim_main` adds their gradients in that order. Floating-point addition is commutative
//! but not associative, so with three or more devices the summed gradients — and everything
//! trained from them — may differ in the last bits from run to run (measured: the crate's
//! `toolkit` tests). This strategy does the same work (one batch per device per step, gradients
//! moved to the first device, one optimizer step there, validation on the first device) but
//! takes the outputs by device index and adds them as `((g₀ + g₁) + g₂) + …`, whatever finishes
//! first.
//!
//! Kept to the shape of burn-train 0.22.1's `MultiDeviceLearningStrategy` with
//! `MultiDeviceOptim::OptimMainDevice`: the same data split (`split_dataloader`), learning-rate
//! stepping, events, checkpoints and early stopping.

use burn::data::dataloader::split::split_dataloader;
use burn::data::dataloader::Progress;
use burn::optim::GradientsAccumulator;
use burn::tensor::Device;
use burn::train::train::WorkerFailure;
use burn::train::{
    EventProcessorTraining, InferenceStep, Interrupter, Learner, LearnerEvent, LearnerModel,
    SupervisedLearningStrategy, SupervisedTrainingEventProcessor, TrainLoader, TrainStep,
    TrainingComponents, TrainingError, TrainingItem, ValidLoader,
};

/// Data-parallel training over `devices` (the first is the main device) with gradients summed in
/// device order: burn-train's `MultiDevice` strategy, made reproducible for three devices or
/// more. Pass it to `SupervisedTraining::with_training_strategy` as a custom strategy.
///
/// ```rust
/// use burn::tensor::Device;
/// use burn::train::{LearnerModel, TrainingStrategy};
/// use burn_deterministic_tensor::train::FixedOrderDataParallel;
/// use std::sync::Arc;
///
/// /// The strategy for `SupervisedTraining::with_training_strategy`.
/// fn data_parallel<M: LearnerModel>(devices: Vec<Device>) -> TrainingStrategy<M> {
///     TrainingStrategy::Custom(Arc::new(FixedOrderDataParallel::new(devices)))
/// }
/// ```
#[derive(Debug, Clone)]
pub struct FixedOrderDataParallel {
    devices: Vec<Device>,
}

impl FixedOrderDataParallel {
    /// # Panics
    /// If `devices` is empty.
    pub fn new(devices: Vec<Device>) -> Self {
        assert!(
            !devices.is_empty(),
            "burn-deterministic FixedOrderDataParallel: data-parallel training needs a device"
        );
        Self { devices }
    }

    fn main_device(&self) -> &Device {
        &self.devices[0]
    }

    /// One epoch: every step takes the next batch of each device's share of the data, computes
    /// the gradients on all devices concurrently, sums them on the main device in device order
    /// and steps the optimizer.
    fn train_epoch<M: LearnerModel>(
        &self,
        loaders: &[TrainLoader<M>],
        learner: &mut Learner<M>,
        grad_accumulation: usize,
        events: &mut SupervisedTrainingEventProcessor<M>,
        interrupter: &Interrupter,
    ) {
        let mut iterators: Vec<_> = loaders.iter().map(|loader| loader.iter()).collect();
        let mut accumulator = GradientsAccumulator::new();
        let mut accumulated = 0;
        let mut iteration = 0;
        loop {
            let mut work = Vec::with_capacity(self.devices.len());
            let (mut items_processed, mut items_total) = (0, 0);
            for (device, iterator) in self.devices.iter().zip(iterators.iter_mut()) {
                match iterator.next() {
                    Some(Ok(batch)) => {
                        let progress = iterator.progress();
                        items_processed += progress.items_processed;
                        items_total += progress.items_total;
                        work.push((device.clone(), batch));
                    }
                    Some(Err(error)) => return interrupter.fail(error),
                    None => {}
                }
            }
            if work.is_empty() {
                break;
            }
            let progress = Progress::new(items_processed, items_total, Some("items".into()));

            let model = learner.model();
            // One scoped thread per device; joining in spawn order is what fixes the order of
            // the sum below.
            let outputs: Vec<_> = std::thread::scope(|scope| {
                let workers: Vec<_> = work
                    .into_iter()
                    .map(|(device, batch)| {
                        let model = model.clone();
                        scope.spawn(move || TrainStep::step(&model.fork(&device), batch))
                    })
                    .collect();
                workers.into_iter().map(|worker| worker.join()).collect()
            });
            let mut step_items = Vec::with_capacity(outputs.len());
            let mut failures = Vec::new();
            for (device_id, output) in outputs.into_iter().enumerate() {
                match output {
                    Ok(output) => {
                        let grads = output.grads.to_device(self.main_device(), &model);
                        accumulator.accumulate(&model, grads);
                        step_items.push(output.item);
                    }
                    // Only where the program unwinds: reported as burn-train's own strategy
                    // reports a worker's panic.
                    Err(payload) => failures.push(WorkerFailure {
                        device_id,
                        message: panic_message(payload.as_ref()),
                    }),
                }
            }
            if !failures.is_empty() {
                return interrupter.fail(TrainingError::Workers(failures));
            }
            accumulated += 1;
            if accumulated >= grad_accumulation || progress.is_completed() {
                learner.lr_step();
                learner.optimizer_step(accumulator.grads());
                accumulated = 0;
            }

            for item in step_items {
                iteration += 1;
                let item = TrainingItem::new(
                    item,
                    progress.clone(),
                    Some(iteration),
                    Some(learner.lr_current()),
                );
                interrupter.fail_on_error(events.process_train(LearnerEvent::ProcessedItem(item)));
            }
            if interrupter.should_stop() {
                break;
            }
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(message), _) => message.to_string(),
        (_, Some(message)) => message.clone(),
        _ => "a training worker panicked".into(),
    }
}

/// Validation on the main device, as burn-train's strategies do it.
fn valid_epoch<M: LearnerModel>(
    loader: &ValidLoader<M>,
    learner: &Learner<M>,
    events: &mut SupervisedTrainingEventProcessor<M>,
    interrupter: &Interrupter,
) {
    let model = learner.model().valid();
    let mut iterator = loader.iter();
    let mut iteration = 0;
    while let Some(batch) = iterator.next() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(error) => return interrupter.fail(error),
        };
        let progress = iterator.progress();
        iteration += 1;
        let item = TrainingItem::new(
            InferenceStep::step(&model, batch),
            progress,
            Some(iteration),
            None,
        );
        interrupter.fail_on_error(events.process_valid(LearnerEvent::ProcessedItem(item)));
        if interrupter.should_stop() {
            break;
        }
    }
}

impl<M: LearnerModel> SupervisedLearningStrategy<M> for FixedOrderDataParallel {
    fn fit(
        &self,
        components: TrainingComponents<M>,
        mut learner: Learner<M>,
        dataloader_train: TrainLoader<M>,
        dataloader_valid: ValidLoader<M>,
        starting_epoch: usize,
    ) -> (M, SupervisedTrainingEventProcessor<M>) {
        let train_items = dataloader_train.num_items();
        // Each device's loader yields batches already on that device.
        let loaders = split_dataloader(dataloader_train, &self.devices);
        let dataloader_valid = dataloader_valid.to_device(&self.main_device().clone().inner());
        let valid_items = dataloader_valid.num_items();
        learner.fork(self.main_device());
        let mut events = components.event_processor;
        let mut checkpointer = components.checkpointer;
        let mut early_stopping = components.early_stopping;
        let interrupter = components.interrupter;
        let grad_accumulation = components.grad_accumulation.unwrap_or(1);

        for epoch in starting_epoch..=components.num_epochs {
            interrupter.fail_on_error(events.process_train(LearnerEvent::StartSplit {
                epoch_number: epoch,
                total_items: train_items,
            }));
            self.train_epoch(
                &loaders,
                &mut learner,
                grad_accumulation,
                &mut events,
                &interrupter,
            );
            interrupter.fail_on_error(events.process_train(LearnerEvent::EndSplit(epoch)));
            if interrupter.should_stop() {
                break;
            }
            interrupter.fail_on_error(events.process_valid(LearnerEvent::StartSplit {
                epoch_number: epoch,
                total_items: valid_items,
            }));
            valid_epoch(&dataloader_valid, &learner, &mut events, &interrupter);
            interrupter.fail_on_error(events.process_valid(LearnerEvent::EndSplit(epoch)));
            interrupter.fail_on_error(events.process_train(LearnerEvent::EndEpoch(epoch)));
            if checkpointer.is_some() || early_stopping.is_some() {
                interrupter.fail_on_error(events.flush());
            }
            if interrupter.should_stop() {
                break;
            }
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
