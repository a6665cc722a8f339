//! burn-train glue for the two example models: batches, batchers, a seeded flip augmentation,
//! the train/validation steps, and epoch-level metrics (loss, mIoU, pixel accuracy, δ1, AbsRel,
//! RMSE) for burn-train's `Learner`. Plain Burn: generic over any backend.
//!
//! The metrics read their items on the host after burn-train syncs them, so they hold no
//! tensors and no backend type. mIoU and the depth metrics are computed over everything seen in
//! the epoch so far (a confusion matrix / pixel sums), not averaged per batch: the epoch value is
//! the metric of the whole split.

use crate::data::{DepthSample, SegmentationSample};
use crate::metrics::{Confusion, DepthAccumulator};
use crate::models::{
    depth_loss, predict_classes, predict_depth, segmentation_loss, DepthNet, SegmentationNet,
};
use crate::rng::Rng;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use burn::train::metric::{
    Adaptor, ItemLazy, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric,
    NumericAttributes, NumericEntry, SerializedEntry,
};
use burn::train::{InferenceStep, TrainOutput, TrainStep};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Batches and batchers

/// Images `[N, 3, H, W]` and class masks `[N, H, W]`.
#[derive(Debug, Clone)]
pub struct SegmentationBatch<B: Backend> {
    pub images: Tensor<B, 4>,
    pub masks: Tensor<B, 3, Int>,
}

/// Images `[N, 3, H, W]` and depth `[N, 1, H, W]` (0 = invalid pixel).
#[derive(Debug, Clone)]
pub struct DepthBatch<B: Backend> {
    pub images: Tensor<B, 4>,
    pub depth: Tensor<B, 4>,
}

/// Stacks samples of one size into a batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleBatcher;

fn check_sizes(sizes: impl Iterator<Item = [usize; 2]>) -> [usize; 2] {
    let mut sizes = sizes;
    let first = sizes.next().expect("a batch needs at least one sample");
    for size in sizes {
        assert_eq!(size, first, "samples of one batch must have the same size");
    }
    first
}

impl<B: Backend> Batcher<B, SegmentationSample, SegmentationBatch<B>> for SampleBatcher {
    fn batch(&self, items: Vec<SegmentationSample>, device: &B::Device) -> SegmentationBatch<B> {
        let [h, w] = check_sizes(items.iter().map(|s| s.size));
        let n = items.len();
        let images: Vec<f32> = items.iter().flat_map(|s| s.image.iter().copied()).collect();
        let masks: Vec<i64> = items
            .iter()
            .flat_map(|s| s.mask.iter().map(|&c| c as i64))
            .collect();
        SegmentationBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            masks: Tensor::from_data(TensorData::new(masks, [n, h, w]), device),
        }
    }
}

impl<B: Backend> Batcher<B, DepthSample, DepthBatch<B>> for SampleBatcher {
    fn batch(&self, items: Vec<DepthSample>, device: &B::Device) -> DepthBatch<B> {
        let [h, w] = check_sizes(items.iter().map(|s| s.size));
        let n = items.len();
        let images: Vec<f32> = items.iter().flat_map(|s| s.image.iter().copied()).collect();
        let depth: Vec<f32> = items.iter().flat_map(|s| s.depth.iter().copied()).collect();
        DepthBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            depth: Tensor::from_data(TensorData::new(depth, [n, 1, h, w]), device),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Augmentation

/// A sample that can be mirrored left-right.
pub trait HorizontalFlip {
    fn flip_horizontal(&self) -> Self;
}

fn flip_planes<T: Copy>(data: &[T], [h, w]: [usize; 2]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    for row in data.chunks_exact(w) {
        out.extend(row.iter().rev());
    }
    debug_assert_eq!(out.len() % (h * w), 0);
    out
}

impl HorizontalFlip for SegmentationSample {
    fn flip_horizontal(&self) -> Self {
        Self {
            image: flip_planes(&self.image, self.size),
            mask: flip_planes(&self.mask, self.size),
            size: self.size,
        }
    }
}

impl HorizontalFlip for DepthSample {
    fn flip_horizontal(&self) -> Self {
        Self {
            image: flip_planes(&self.image, self.size),
            depth: flip_planes(&self.depth, self.size),
            size: self.size,
        }
    }
}

/// Mirrors each item with probability 1/2, decided by `(seed, index)` alone: the same items are
/// flipped in every run and in every process, whatever order or thread reads them. (burn-train
/// does not tell a dataset the epoch, so the choice is per item, not per item and epoch.)
#[derive(Debug, Clone)]
pub struct RandomFlip<D> {
    pub inner: D,
    pub seed: u64,
}

impl<I: HorizontalFlip + Send + Sync, D: Dataset<I>> Dataset<I> for RandomFlip<D> {
    fn get(&self, index: usize) -> Option<I> {
        let item = self.inner.get(index)?;
        let flip = Rng::for_item(self.seed, index as u64).next_u64() & 1 == 1;
        Some(if flip { item.flip_horizontal() } else { item })
    }

    fn len(&self) -> usize {
        self.inner.len()
    }
}

// ---------------------------------------------------------------------------------------------
// Steps

/// What a segmentation step hands to the metrics: the loss and per-pixel predictions at the mask
/// size (bilinear upsample of the main logits, as the loss sees them).
pub struct SegmentationStepOutput<B: Backend> {
    pub loss: Tensor<B, 1>,
    pub predicted: Tensor<B, 3, Int>,
    pub masks: Tensor<B, 3, Int>,
}

/// What a depth step hands to the metrics: the loss and the depth at the ground-truth size.
pub struct DepthStepOutput<B: Backend> {
    pub loss: Tensor<B, 1>,
    pub predicted: Tensor<B, 4>,
    pub truth: Tensor<B, 4>,
}

impl<B: Backend> SegmentationNet<B> {
    fn step_output(&self, batch: SegmentationBatch<B>) -> SegmentationStepOutput<B> {
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

impl<B: AutodiffBackend> TrainStep for SegmentationNet<B> {
    type Input = SegmentationBatch<B>;
    type Output = SegmentationStepOutput<B>;

    fn step(&self, batch: Self::Input) -> TrainOutput<Self::Output> {
        let output = self.step_output(batch);
        let grads = output.loss.backward();
        TrainOutput::new(self, grads, output)
    }
}

impl<B: Backend> InferenceStep for SegmentationNet<B> {
    type Input = SegmentationBatch<B>;
    type Output = SegmentationStepOutput<B>;

    fn step(&self, batch: Self::Input) -> Self::Output {
        self.step_output(batch)
    }
}

impl<B: Backend> DepthNet<B> {
    fn step_output(&self, batch: DepthBatch<B>) -> DepthStepOutput<B> {
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

impl<B: AutodiffBackend> TrainStep for DepthNet<B> {
    type Input = DepthBatch<B>;
    type Output = DepthStepOutput<B>;

    fn step(&self, batch: Self::Input) -> TrainOutput<Self::Output> {
        let output = self.step_output(batch);
        let grads = output.loss.backward();
        TrainOutput::new(self, grads, output)
    }
}

impl<B: Backend> InferenceStep for DepthNet<B> {
    type Input = DepthBatch<B>;
    type Output = DepthStepOutput<B>;

    fn step(&self, batch: Self::Input) -> Self::Output {
        self.step_output(batch)
    }
}

// ---------------------------------------------------------------------------------------------
// Host-side items (what burn-train's metric thread receives)

/// The loss of one batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchLoss {
    pub value: f64,
    pub batch_size: usize,
}

/// Per-pixel class ids of one batch.
#[derive(Debug, Clone)]
pub struct ClassPixels {
    pub predicted: Vec<usize>,
    pub truth: Vec<usize>,
}

/// Predicted and true depth of one batch, one `Vec` per image.
#[derive(Debug, Clone)]
pub struct DepthImages {
    pub predicted: Vec<Vec<f32>>,
    pub truth: Vec<Vec<f32>>,
}

/// A synced segmentation step output.
#[derive(Debug, Clone)]
pub struct SegmentationItem {
    pub loss: BatchLoss,
    pub pixels: ClassPixels,
}

/// A synced depth step output.
#[derive(Debug, Clone)]
pub struct DepthItem {
    pub loss: BatchLoss,
    pub images: DepthImages,
}

fn read_loss<B: Backend>(loss: Tensor<B, 1>, batch_size: usize) -> BatchLoss {
    BatchLoss {
        value: loss.into_scalar().elem::<f64>(),
        batch_size,
    }
}

fn read_classes<B: Backend>(t: Tensor<B, 3, Int>) -> Vec<usize> {
    t.into_data()
        .iter::<i64>()
        .map(|c| usize::try_from(c).expect("class ids are non-negative"))
        .collect()
}

impl<B: Backend> ItemLazy for SegmentationStepOutput<B> {
    type ItemSync = SegmentationItem;

    fn sync(self) -> SegmentationItem {
        let batch_size = self.masks.dims()[0];
        SegmentationItem {
            loss: read_loss(self.loss, batch_size),
            pixels: ClassPixels {
                predicted: read_classes(self.predicted),
                truth: read_classes(self.masks),
            },
        }
    }
}

impl<B: Backend> ItemLazy for DepthStepOutput<B> {
    type ItemSync = DepthItem;

    fn sync(self) -> DepthItem {
        let [n, _, h, w] = self.truth.dims();
        let per_image = |t: Tensor<B, 4>| -> Vec<Vec<f32>> {
            let values: Vec<f32> = t.into_data().iter::<f32>().collect();
            values.chunks_exact(h * w).map(<[f32]>::to_vec).collect()
        };
        DepthItem {
            loss: read_loss(self.loss, n),
            images: DepthImages {
                predicted: per_image(self.predicted),
                truth: per_image(self.truth),
            },
        }
    }
}

impl Adaptor<BatchLoss> for SegmentationItem {
    fn adapt(&self) -> BatchLoss {
        self.loss
    }
}

impl Adaptor<ClassPixels> for SegmentationItem {
    fn adapt(&self) -> ClassPixels {
        self.pixels.clone()
    }
}

impl Adaptor<BatchLoss> for DepthItem {
    fn adapt(&self) -> BatchLoss {
        self.loss
    }
}

impl Adaptor<DepthImages> for DepthItem {
    fn adapt(&self) -> DepthImages {
        self.images.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics

/// What burn-train displays and logs for one update: the batch value (serialised with its weight,
/// so that burn's own epoch aggregate is a proper mean) and the running epoch value.
fn entry(name: &str, current: NumericEntry, running: f64, precision: usize) -> SerializedEntry {
    let shown = match current {
        NumericEntry::Value(v) => v,
        NumericEntry::Aggregated {
            aggregated_value, ..
        } => aggregated_value,
    };
    SerializedEntry::new(
        format!("{name}: {shown:.precision$} (epoch {running:.precision$})"),
        current.serialize(),
    )
}

fn attributes(unit: Option<&str>, higher_is_better: bool) -> MetricAttributes {
    NumericAttributes {
        unit: unit.map(str::to_string),
        higher_is_better,
    }
    .into()
}

/// The loss: per batch as the current value, the batch-size weighted mean over the epoch so far
/// as the running value. Named "Loss" like burn-train's own.
#[derive(Clone)]
pub struct EpochLoss {
    name: MetricName,
    sum: f64,
    count: usize,
    last: BatchLoss,
}

impl Default for EpochLoss {
    fn default() -> Self {
        Self {
            name: Arc::new("Loss".into()),
            sum: 0.0,
            count: 0,
            last: BatchLoss {
                value: f64::NAN,
                batch_size: 0,
            },
        }
    }
}

impl EpochLoss {
    fn add(&mut self, item: &BatchLoss) {
        self.sum += item.value * item.batch_size as f64;
        self.count += item.batch_size;
        self.last = *item;
    }

    fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }
}

impl Metric for EpochLoss {
    type Input = BatchLoss;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        attributes(None, false)
    }

    fn update(&mut self, item: &BatchLoss, _: &MetricMetadata) -> SerializedEntry {
        self.add(item);
        entry(&self.name, self.value(), self.mean(), 4)
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

impl Numeric for EpochLoss {
    fn value(&self) -> NumericEntry {
        NumericEntry::Aggregated {
            aggregated_value: self.last.value,
            count: self.last.batch_size,
        }
    }

    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.mean())
    }
}

/// Which number a [`SegmentationMetric`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentationStatistic {
    MeanIou,
    PixelAccuracy,
}

/// mIoU or pixel accuracy (in %): of the last batch as the current value, of the confusion
/// matrix accumulated over the epoch so far as the running value.
#[derive(Clone)]
pub struct SegmentationMetric {
    name: MetricName,
    statistic: SegmentationStatistic,
    confusion: Confusion,
    batch: Confusion,
    classes: usize,
}

impl SegmentationMetric {
    pub fn new(statistic: SegmentationStatistic, classes: usize) -> Self {
        let name = match statistic {
            SegmentationStatistic::MeanIou => "mIoU",
            SegmentationStatistic::PixelAccuracy => "Pixel Accuracy",
        };
        Self {
            name: Arc::new(name.into()),
            statistic,
            confusion: Confusion::new(classes),
            batch: Confusion::new(classes),
            classes,
        }
    }

    fn percent(&self, confusion: &Confusion) -> f64 {
        let m = confusion.metrics();
        100.0
            * match self.statistic {
                SegmentationStatistic::MeanIou => m.miou,
                SegmentationStatistic::PixelAccuracy => m.pixel_accuracy,
            }
    }
}

impl Metric for SegmentationMetric {
    type Input = ClassPixels;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        attributes(Some("%"), true)
    }

    fn update(&mut self, item: &ClassPixels, _: &MetricMetadata) -> SerializedEntry {
        self.batch = Confusion::new(self.classes);
        self.batch.add(&item.predicted, &item.truth);
        self.confusion.add(&item.predicted, &item.truth);
        entry(&self.name, self.value(), self.percent(&self.confusion), 2)
    }

    fn clear(&mut self) {
        self.confusion = Confusion::new(self.classes);
        self.batch = Confusion::new(self.classes);
    }
}

impl Numeric for SegmentationMetric {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.percent(&self.batch))
    }

    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.percent(&self.confusion))
    }
}

/// Which number a [`DepthMetric`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthStatistic {
    /// δ1 in %.
    Delta1,
    AbsRel,
    Rmse,
}

/// δ1, AbsRel or RMSE after per-image median scaling (the scale-invariant loss leaves the global
/// scale free; see [`DepthAccumulator`]): of the last batch as the current value, over the valid
/// pixels of the epoch so far as the running value.
#[derive(Clone)]
pub struct DepthMetric {
    name: MetricName,
    statistic: DepthStatistic,
    accumulator: DepthAccumulator,
    batch: DepthAccumulator,
}

impl DepthMetric {
    pub fn new(statistic: DepthStatistic) -> Self {
        let name = match statistic {
            DepthStatistic::Delta1 => "delta1",
            DepthStatistic::AbsRel => "AbsRel",
            DepthStatistic::Rmse => "RMSE",
        };
        Self {
            name: Arc::new(name.into()),
            statistic,
            accumulator: DepthAccumulator::new(true),
            batch: DepthAccumulator::new(true),
        }
    }

    fn statistic_of(&self, accumulator: &DepthAccumulator) -> f64 {
        let m = accumulator.metrics();
        match self.statistic {
            DepthStatistic::Delta1 => 100.0 * m.delta1,
            DepthStatistic::AbsRel => m.abs_rel,
            DepthStatistic::Rmse => m.rmse,
        }
    }
}

impl Metric for DepthMetric {
    type Input = DepthImages;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        match self.statistic {
            DepthStatistic::Delta1 => attributes(Some("%"), true),
            DepthStatistic::AbsRel => attributes(None, false),
            DepthStatistic::Rmse => attributes(Some("m"), false),
        }
    }

    fn update(&mut self, item: &DepthImages, _: &MetricMetadata) -> SerializedEntry {
        self.batch = DepthAccumulator::new(true);
        for (predicted, truth) in item.predicted.iter().zip(&item.truth) {
            self.accumulator.add_image(predicted, truth);
            self.batch.add_image(predicted, truth);
        }
        entry(
            &self.name,
            self.value(),
            self.statistic_of(&self.accumulator),
            3,
        )
    }

    fn clear(&mut self) {
        self.accumulator = DepthAccumulator::new(true);
        self.batch = DepthAccumulator::new(true);
    }
}

impl Numeric for DepthMetric {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.statistic_of(&self.batch))
    }

    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.statistic_of(&self.accumulator))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SyntheticDepth, SyntheticSegmentation};

    #[test]
    fn flip_mirrors_rows_of_every_plane() {
        let sample = SegmentationSample {
            image: (0..12).map(|v| v as f32).collect(), // 3 planes of 2x2
            mask: vec![1, 2, 3, 4],
            size: [2, 2],
        };
        let flipped = sample.flip_horizontal();
        assert_eq!(
            flipped.image,
            vec![1., 0., 3., 2., 5., 4., 7., 6., 9., 8., 11., 10.]
        );
        assert_eq!(flipped.mask, vec![2, 1, 4, 3]);
        assert_eq!(flipped.flip_horizontal(), sample);
    }

    #[test]
    fn random_flip_depends_on_seed_and_index_only() {
        let data = SyntheticDepth::new(3, [8, 8], 16);
        let a = RandomFlip {
            inner: data.clone(),
            seed: 5,
        };
        let flipped: Vec<bool> = (0..16)
            .map(|i| a.get(i).unwrap() != Dataset::get(&data, i).unwrap())
            .collect();
        // Reading in reverse order gives the same items.
        for i in (0..16).rev() {
            assert_eq!(
                a.get(i),
                RandomFlip {
                    inner: data.clone(),
                    seed: 5
                }
                .get(i)
            );
        }
        assert!(flipped.iter().any(|f| *f) && flipped.iter().any(|f| !*f));
        assert_eq!(a.len(), 16);
    }

    /// (last batch, epoch so far)
    fn values(metric: &impl Numeric) -> (f64, f64) {
        match (metric.value(), metric.running_value()) {
            (NumericEntry::Value(v), NumericEntry::Value(r)) => (v, r),
            other => panic!("expected plain values, got {other:?}"),
        }
    }

    #[test]
    fn segmentation_metric_accumulates_over_batches_and_clears() {
        let mut miou = SegmentationMetric::new(SegmentationStatistic::MeanIou, 3);
        let meta = MetricMetadata {
            progress: burn::data::dataloader::Progress::new(0, 1),
            global_progress: burn::data::dataloader::Progress::new(0, 1),
            iteration: None,
            lr: None,
        };
        // Batch 1: perfect on classes 0 and 1. Batch 2: class 2 predicted as 0.
        miou.update(
            &ClassPixels {
                predicted: vec![0, 1],
                truth: vec![0, 1],
            },
            &meta,
        );
        assert_eq!(values(&miou), (100.0, 100.0));
        miou.update(
            &ClassPixels {
                predicted: vec![0],
                truth: vec![2],
            },
            &meta,
        );
        // Epoch IoU: class 0: 1/2, class 1: 1, class 2: 0 -> mean 1/2. Batch: classes 0 and 2
        // both IoU 0.
        assert_eq!(values(&miou), (0.0, 50.0));
        miou.clear();
        miou.update(
            &ClassPixels {
                predicted: vec![2],
                truth: vec![2],
            },
            &meta,
        );
        assert_eq!(values(&miou), (100.0, 100.0));
    }

    #[test]
    fn epoch_loss_is_the_batch_weighted_mean() {
        let mut loss = EpochLoss::default();
        loss.add(&BatchLoss {
            value: 1.0,
            batch_size: 3,
        });
        loss.add(&BatchLoss {
            value: 3.0,
            batch_size: 1,
        });
        assert_eq!(loss.mean(), 1.5);
        assert!(matches!(
            loss.value(),
            NumericEntry::Aggregated { aggregated_value, count: 1 } if aggregated_value == 3.0
        ));
    }

    #[test]
    fn batcher_stacks_samples_in_order() {
        type B = burn::backend::ndarray::NdArray;
        let data = SyntheticSegmentation::new(1, [8, 16], 4, 3);
        let samples: Vec<_> = (0..3).map(|i| Dataset::get(&data, i).unwrap()).collect();
        let batch: SegmentationBatch<B> = SampleBatcher.batch(samples.clone(), &Default::default());
        assert_eq!(batch.images.dims(), [3, 3, 8, 16]);
        let masks: Vec<i64> = batch.masks.into_data().iter::<i64>().collect();
        assert_eq!(masks.len(), 3 * 8 * 16);
        assert_eq!(
            masks[128..256]
                .iter()
                .map(|&c| c as usize)
                .collect::<Vec<_>>(),
            samples[1].mask
        );
    }
}
