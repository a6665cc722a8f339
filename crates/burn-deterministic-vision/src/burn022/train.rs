//! burn-train 0.22.1 glue for the two example models: batches, a batcher, the seeded flip
//! augmentation, the train/validation steps, epoch-level metrics (loss, mIoU, pixel accuracy,
//! δ1, AbsRel, RMSE), the metric logger that feeds the curves, and the loaders, checkpointing,
//! rendering and strategy the examples set up — each a thin layer over the Burn-free parts
//! (`crate::data`, `crate::metrics`, `crate::run`), in Burn 0.22's idiom: tensors in the step
//! outputs, read on the metric thread.

use super::models::{
    depth_loss, predict_classes, predict_depth, segmentation_loss, DepthNet, SegmentationNet,
};
use crate::data::{flips, stack_depth, stack_segmentation, DepthSample, HorizontalFlip};
use crate::data::{SampleSource, SegmentationSample};
use crate::metrics::{
    entry_text, BatchLoss, ClassPixels, DepthImages, DepthScore, DepthStatistic, HostMetric,
    LossMean, SegmentationScore, SegmentationStatistic,
};
use crate::run::config::{DataParallel, RunConfig};
use crate::run::log::{Curves, EpochRecord};
use burn022::data::dataloader::batcher::Batcher;
use burn022::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn022::data::dataset::{Dataset, DatasetError, InMemDataset};
use burn022::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn022::optim::{GradientsParams, ModuleOptimizer, MultiGradientsParams};
use burn022::tensor::{Device, ExecutionError, Int, Tensor, TensorData, TensorReadError};
use burn022::train::checkpoint::KeepLastNCheckpoints;
use burn022::train::logger::MetricLogger;
use burn022::train::metric::store::{EpochSummary, MetricsUpdate, Split};
use burn022::train::metric::{
    Adaptor, ItemLazy, Metric, MetricAttributes, MetricDefinition, MetricId, MetricMetadata,
    MetricName, Numeric, NumericAttributes, NumericEntry, SerializedEntry,
};
use burn022::train::{
    ExecutionStrategy, InferenceStep, LearnerModel, MultiDeviceOptim, SupervisedTraining,
    TrainOutput, TrainStep, TrainingStrategy,
};
use burn_deterministic_tensor::train::{
    optimize_multi_traced, optimize_traced, FixedOrderDataParallel, PlainProgress, ResumableLoader,
};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------------------------------------
// Batches, batcher, augmentation

/// Images `[N, 3, H, W]` and class masks `[N, H, W]`.
#[derive(Debug, Clone)]
pub struct SegmentationBatch {
    pub images: Tensor<4>,
    pub masks: Tensor<3, Int>,
}

/// Images `[N, 3, H, W]` and depth `[N, 1, H, W]` (0 = invalid pixel).
#[derive(Debug, Clone)]
pub struct DepthBatch {
    pub images: Tensor<4>,
    pub depth: Tensor<4>,
}

/// Stacks samples of one size into a batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleBatcher;

impl Batcher<SegmentationSample, SegmentationBatch> for SampleBatcher {
    fn batch(&self, items: Vec<SegmentationSample>, device: &Device) -> SegmentationBatch {
        let (images, masks, [n, h, w]) = stack_segmentation(&items);
        SegmentationBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            masks: Tensor::from_data(TensorData::new(masks, [n, h, w]), device),
        }
    }
}

impl Batcher<DepthSample, DepthBatch> for SampleBatcher {
    fn batch(&self, items: Vec<DepthSample>, device: &Device) -> DepthBatch {
        let (images, depth, [n, h, w]) = stack_depth(&items);
        DepthBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            depth: Tensor::from_data(TensorData::new(depth, [n, 1, h, w]), device),
        }
    }
}

/// The seeded flip augmentation ([`flips`]) over a Burn 0.22 dataset.
#[derive(Debug, Clone)]
pub struct RandomFlip<D> {
    pub inner: D,
    pub seed: u64,
}

impl<I: HorizontalFlip + Send + Sync, D: Dataset<I>> Dataset<I> for RandomFlip<D> {
    fn get(&self, index: usize) -> Result<I, DatasetError> {
        let item = self.inner.get(index)?;
        Ok(if flips(self.seed, index) {
            item.flip_horizontal()
        } else {
            item
        })
    }

    fn len(&self) -> usize {
        self.inner.len()
    }
}

/// Samples held in memory, shared by the learner's two loaders.
pub type Samples<I> = Arc<InMemDataset<I>>;

/// Reads every sample of `source` into memory.
pub fn in_memory<I: Clone + Send + Sync>(source: &dyn SampleSource<I>) -> Samples<I> {
    Arc::new(InMemDataset::new(source.all_samples()))
}

// ---------------------------------------------------------------------------------------------
// Steps

/// What a segmentation step hands to the metrics: the loss and per-pixel predictions at the mask
/// size (bilinear upsample of the main logits, as the loss sees them).
#[derive(Debug, Clone)]
pub struct SegmentationStepOutput {
    pub loss: Tensor<1>,
    pub predicted: Tensor<3, Int>,
    pub masks: Tensor<3, Int>,
}

/// What a depth step hands to the metrics: the loss and the depth at the ground-truth size.
#[derive(Debug, Clone)]
pub struct DepthStepOutput {
    pub loss: Tensor<1>,
    pub predicted: Tensor<4>,
    pub truth: Tensor<4>,
}

impl SegmentationNet {
    fn step_output(&self, batch: SegmentationBatch) -> SegmentationStepOutput {
        let [_, h, w] = batch.masks.dims();
        let output = self.forward(batch.images);
        let loss = segmentation_loss(&output, batch.masks.clone(), self.aux_weight);
        SegmentationStepOutput {
            predicted: predict_classes(&output, [h, w]),
            loss,
            masks: batch.masks,
        }
    }
}

impl DepthNet {
    fn step_output(&self, batch: DepthBatch) -> DepthStepOutput {
        let [_, _, h, w] = batch.depth.dims();
        let predicted = self.forward(batch.images);
        let loss = depth_loss(predicted.clone(), batch.depth.clone());
        DepthStepOutput {
            predicted: predict_depth(predicted, [h, w]),
            loss,
            truth: batch.depth,
        }
    }
}

/// `TrainStep` and `InferenceStep` of a model whose `step_output` computes its output; the
/// optimizer steps go through `optimize_traced`, so that a check's runs record each step's
/// gradients (or, on several devices, values) and the check can say where runs differ.
macro_rules! steps {
    ($model:ty, $batch:ty, $output:ty) => {
        impl TrainStep for $model {
            type Input = $batch;
            type Output = $output;

            fn step(&self, batch: $batch) -> TrainOutput<$output> {
                let output = self.step_output(batch);
                let grads = output.loss.backward();
                TrainOutput::new(self, grads, output)
            }

            fn optimize(
                self,
                optim: &mut ModuleOptimizer,
                lr: ModuleLearningRate,
                grads: GradientsParams,
            ) -> Self {
                optimize_traced(self, optim, lr, grads)
            }

            fn optimize_multi(
                self,
                optim: &mut ModuleOptimizer,
                lr: ModuleLearningRate,
                grads: MultiGradientsParams,
            ) -> Self {
                optimize_multi_traced(self, optim, lr, grads)
            }
        }

        impl InferenceStep for $model {
            type Input = $batch;
            type Output = $output;

            fn step(&self, batch: $batch) -> $output {
                self.step_output(batch)
            }
        }
    };
}
steps!(SegmentationNet, SegmentationBatch, SegmentationStepOutput);
steps!(DepthNet, DepthBatch, DepthStepOutput);

// ---------------------------------------------------------------------------------------------
// Metric inputs: the step outputs' tensors, read on the metric thread

/// The loss of one batch.
#[derive(Debug, Clone)]
pub struct LossTensor(pub Tensor<1>, pub usize);

/// Predicted and true class ids of one batch.
#[derive(Debug, Clone)]
pub struct ClassTensors {
    pub predicted: Tensor<3, Int>,
    pub truth: Tensor<3, Int>,
}

/// Predicted and true depth of one batch.
#[derive(Debug, Clone)]
pub struct DepthTensors {
    pub predicted: Tensor<4>,
    pub truth: Tensor<4>,
}

impl ItemLazy for SegmentationStepOutput {
    fn sync(self) -> Result<Self, ExecutionError> {
        // As burn-train's own outputs: dispatch the queued work, leave the tape behind.
        self.loss.device().flush()?;
        Ok(Self {
            loss: self.loss.without_autodiff(),
            predicted: self.predicted,
            masks: self.masks,
        })
    }
}

impl ItemLazy for DepthStepOutput {
    fn sync(self) -> Result<Self, ExecutionError> {
        self.loss.device().flush()?;
        Ok(Self {
            loss: self.loss.without_autodiff(),
            predicted: self.predicted.without_autodiff(),
            truth: self.truth,
        })
    }
}

impl Adaptor<LossTensor> for SegmentationStepOutput {
    fn adapt(&self) -> LossTensor {
        LossTensor(self.loss.clone(), self.masks.dims()[0])
    }
}

impl Adaptor<ClassTensors> for SegmentationStepOutput {
    fn adapt(&self) -> ClassTensors {
        ClassTensors {
            predicted: self.predicted.clone(),
            truth: self.masks.clone(),
        }
    }
}

impl Adaptor<LossTensor> for DepthStepOutput {
    fn adapt(&self) -> LossTensor {
        LossTensor(self.loss.clone(), self.truth.dims()[0])
    }
}

impl Adaptor<DepthTensors> for DepthStepOutput {
    fn adapt(&self) -> DepthTensors {
        DepthTensors {
            predicted: self.predicted.clone(),
            truth: self.truth.clone(),
        }
    }
}

/// A host-side metric input read from the step output's tensors on the metric thread.
pub trait FromTensors: Sized {
    /// The tensors the step output hands over.
    type Tensors: Send + Sync;
    /// Reads them on the host.
    fn read(tensors: &Self::Tensors) -> Result<Self, TensorReadError>;
}

impl FromTensors for BatchLoss {
    type Tensors = LossTensor;

    fn read(LossTensor(loss, batch_size): &LossTensor) -> Result<Self, TensorReadError> {
        Ok(BatchLoss {
            value: loss.clone().try_into_scalar::<f64>()?,
            batch_size: *batch_size,
        })
    }
}

fn read_classes(t: Tensor<3, Int>) -> Result<Vec<usize>, TensorReadError> {
    Ok(t.try_into_data_as::<i64>()?
        .iter::<i64>()
        .map(|c| usize::try_from(c).expect("class ids are non-negative"))
        .collect())
}

impl FromTensors for ClassPixels {
    type Tensors = ClassTensors;

    fn read(tensors: &ClassTensors) -> Result<Self, TensorReadError> {
        Ok(ClassPixels {
            predicted: read_classes(tensors.predicted.clone())?,
            truth: read_classes(tensors.truth.clone())?,
        })
    }
}

fn read_images(t: Tensor<4>) -> Result<Vec<Vec<f32>>, TensorReadError> {
    let [_, _, h, w] = t.dims();
    let values: Vec<f32> = t.try_into_data_as::<f32>()?.iter::<f32>().collect();
    Ok(values.chunks_exact(h * w).map(<[f32]>::to_vec).collect())
}

impl FromTensors for DepthImages {
    type Tensors = DepthTensors;

    fn read(tensors: &DepthTensors) -> Result<Self, TensorReadError> {
        Ok(DepthImages {
            predicted: read_images(tensors.predicted.clone())?,
            truth: read_images(tensors.truth.clone())?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics

/// One of the examples' host-side metrics ([`HostMetric`]) as a burn-train metric: the last
/// batch's value as the current value (with its weight, where it has one), the epoch's so far
/// as the running value, and at the epoch's end its value over the whole epoch.
#[derive(Clone)]
pub struct ExampleMetric<S>(S);

/// The loss, per batch and as the batch-size weighted mean over the epoch. Named "Loss" like
/// burn-train's own.
pub type EpochLoss = ExampleMetric<LossMean>;
/// mIoU or pixel accuracy (in %) of the last batch and of the epoch's confusion matrix.
pub type SegmentationMetric = ExampleMetric<SegmentationScore>;
/// δ1, AbsRel or RMSE after per-image median scaling ([`DepthScore`]).
pub type DepthMetric = ExampleMetric<DepthScore>;

impl Default for EpochLoss {
    fn default() -> Self {
        Self(LossMean::default())
    }
}

impl SegmentationMetric {
    pub fn new(statistic: SegmentationStatistic, classes: usize) -> Self {
        Self(SegmentationScore::new(statistic, classes))
    }
}

impl DepthMetric {
    pub fn new(statistic: DepthStatistic) -> Self {
        Self(DepthScore::new(statistic))
    }
}

impl<S: HostMetric> Metric for ExampleMetric<S>
where
    S::Input: FromTensors,
{
    type Input = <S::Input as FromTensors>::Tensors;

    fn name(&self) -> MetricName {
        Arc::new(self.0.name().into())
    }

    fn attributes(&self) -> MetricAttributes {
        let (unit, higher_is_better) = self.0.unit_and_direction();
        NumericAttributes {
            unit: unit.map(str::to_string),
            higher_is_better,
        }
        .into()
    }

    fn update(
        &mut self,
        item: &Self::Input,
        _: &MetricMetadata,
    ) -> Result<SerializedEntry, TensorReadError> {
        self.0.add(&S::Input::read(item)?);
        let (batch, _) = self.0.batch_value();
        let (name, precision) = (self.0.name(), self.0.precision());
        Ok(SerializedEntry::new(
            entry_text(name, batch, self.0.epoch_value(), precision),
            NumericEntry::Value(batch).serialize(),
        ))
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        let (name, precision, epoch) = (self.0.name(), self.0.precision(), self.0.epoch_value());
        Ok(SerializedEntry::new(
            format!("{name}: {epoch:.precision$}"),
            NumericEntry::Final(epoch).serialize(),
        ))
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

impl<S: HostMetric> Numeric for ExampleMetric<S> {
    fn value(&self) -> Option<NumericEntry> {
        Some(match self.0.batch_value() {
            (value, Some(count)) => NumericEntry::Aggregated {
                aggregated_value: value,
                count,
            },
            (value, None) => NumericEntry::Value(value),
        })
    }

    fn running_value(&self) -> Option<NumericEntry> {
        Some(NumericEntry::Value(self.0.epoch_value()))
    }

    fn final_value(&self) -> NumericEntry {
        NumericEntry::Final(self.0.epoch_value())
    }
}

// ---------------------------------------------------------------------------------------------
// The run's curves, loaders, checkpointing, rendering and strategy

/// A [`MetricLogger`] that feeds the Burn-free [`Curves`]: per split and epoch, each numeric
/// metric's value over the epoch (its final value where burn-train computed one, else its last
/// running value). Clone it before handing it to the learner; the clones share the records.
#[derive(Clone, Default)]
pub struct CurveLogger {
    curves: Arc<Mutex<Curves<MetricId>>>,
}

impl CurveLogger {
    fn curves(&self) -> std::sync::MutexGuard<'_, Curves<MetricId>> {
        self.curves.lock().expect("curve logger poisoned")
    }

    pub fn records(&self) -> Vec<EpochRecord> {
        self.curves().records()
    }

    /// See [`Curves::final_validation`].
    pub fn final_validation(&self, names: &[(&str, &str)]) -> BTreeMap<String, f64> {
        self.curves().final_validation(names)
    }
}

impl MetricLogger for CurveLogger {
    fn log(&mut self, update: MetricsUpdate, _epoch: usize, split: &Split) {
        let mut curves = self.curves();
        let split = split.to_string();
        for numeric in &update.entries_numeric {
            let value = match (&numeric.numeric_entry, &numeric.running_entry) {
                (Some(NumericEntry::Final(value)), _) => *value,
                (_, Some(running)) => running.current(),
                _ => continue,
            };
            curves.log(&split, &numeric.entry.metric_id, value);
        }
    }

    fn read_numeric(
        &mut self,
        name: &str,
        _epoch: usize,
        _split: &Split,
    ) -> Result<Vec<NumericEntry>, String> {
        // Burn's file logger (registered first) answers these; this logger only keeps curves.
        Err(format!("CurveLogger does not serve history for {name}"))
    }

    fn log_metric_definition(&mut self, definition: MetricDefinition) {
        self.curves()
            .define(definition.metric_id, definition.name.to_string());
    }

    fn log_epoch_summary(&mut self, summary: EpochSummary) {
        self.curves()
            .end_epoch(summary.epoch_number, &summary.split.to_string());
    }
}

/// The learner's loaders for the run settings `run`: training shuffled by the seed with the
/// seeded flip augmentation, validation in order. A run resumed after `resume_after` epochs gets
/// the data order of the uninterrupted run, and every epoch seeds the device's generator from
/// the seed and the epoch number (dropout draws the same masks after a resume): the crate's
/// `ResumableLoader`.
///
/// One loader thread (no `num_workers`): burn's multi-worker loader yields batches in the order
/// the workers finish them, which changes the data order from run to run.
#[allow(clippy::type_complexity)]
pub fn loaders<I, Batch>(
    run: &RunConfig,
    train: Samples<I>,
    valid: Samples<I>,
    device: &Device,
    resume_after: Option<usize>,
) -> (Arc<dyn DataLoader<Batch>>, Arc<dyn DataLoader<Batch>>)
where
    I: HorizontalFlip + Clone + std::fmt::Debug + Send + Sync + 'static,
    SampleBatcher: Batcher<I, Batch>,
    Batch: Clone + std::fmt::Debug + Send + 'static,
{
    let loader_train = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(run.batch_size)
        .shuffle(run.seed)
        .set_device(device.clone())
        .build(RandomFlip {
            inner: train,
            seed: run.seed,
        });
    let loader_train = ResumableLoader::new(loader_train)
        .resume_after(resume_after.unwrap_or(0))
        .seed_device_each_epoch(device, run.seed)
        .into_loader();
    let loader_valid = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(run.batch_size)
        .set_device(device.clone().inner())
        .build(valid);
    (loader_train, loader_valid)
}

/// What both training examples add to their `SupervisedTraining`: burn-train's checkpointers,
/// kept for the last two epochs, the epoch to resume after, and without a terminal (a log, a
/// file) the crate's `PlainProgress` instead of burn-train's per-item dump.
pub fn checkpointed_and_rendered<M: LearnerModel>(
    training: SupervisedTraining<M>,
    resume_after: Option<usize>,
) -> SupervisedTraining<M> {
    let training = training
        .with_default_checkpointers()
        .with_checkpointing_strategy(KeepLastNCheckpoints::new(2));
    let training = match resume_after {
        Some(epoch) => training.checkpoint(epoch),
        None => training,
    };
    if std::io::stdout().is_terminal() {
        training
    } else {
        training.renderer(Box::new(PlainProgress::new()))
    }
}

/// The training strategy for `devices`: burn-train's single-device loop for one device; for
/// several, the crate's [`FixedOrderDataParallel`] (gradients summed in device order) or, for
/// comparison, burn-train's own `MultiDevice` (summed in the order the workers finish, the
/// optimizer on the main device).
pub fn training_strategy<M: LearnerModel>(
    devices: Vec<Device>,
    data_parallel: DataParallel,
) -> TrainingStrategy<M> {
    match (devices.len(), data_parallel) {
        (1, _) => TrainingStrategy::Default(ExecutionStrategy::SingleDevice(devices[0].clone())),
        (_, DataParallel::FixedOrder) => {
            TrainingStrategy::Custom(Arc::new(FixedOrderDataParallel::new(devices)))
        }
        (_, DataParallel::BurnTrain) => TrainingStrategy::Default(ExecutionStrategy::MultiDevice(
            devices,
            MultiDeviceOptim::OptimMainDevice,
        )),
    }
}
