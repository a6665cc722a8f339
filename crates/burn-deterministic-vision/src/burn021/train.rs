//! burn-train glue for the two example models: batches, batchers, a seeded flip augmentation,
//! the train/validation steps, and epoch-level metrics (loss, mIoU, pixel accuracy, δ1, AbsRel,
//! RMSE) for burn-train's `Learner`. Plain Burn: generic over any backend.
//!
//! The metrics read their items on the host after burn-train syncs them, so they hold no
//! tensors and no backend type. mIoU and the depth metrics are computed over everything seen in
//! the epoch so far (a confusion matrix / pixel sums), not averaged per batch: the epoch value is
//! the metric of the whole split.

use crate::data::{flips, stack_depth, stack_segmentation, DepthSample, SegmentationSample};
use crate::metrics::{
    entry_text, BatchLoss, ClassPixels, DepthImages, DepthItem, DepthScore, HostMetric, LossMean,
    SegmentationItem, SegmentationScore,
};
use crate::models::{
    depth_loss, predict_classes, predict_depth, segmentation_loss, DepthNet, SegmentationNet,
};
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

pub use crate::data::HorizontalFlip;
pub use crate::metrics::{DepthStatistic, SegmentationStatistic};

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

impl<B: Backend> Batcher<B, SegmentationSample, SegmentationBatch<B>> for SampleBatcher {
    fn batch(&self, items: Vec<SegmentationSample>, device: &B::Device) -> SegmentationBatch<B> {
        let (images, masks, [n, h, w]) = stack_segmentation(&items);
        SegmentationBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            masks: Tensor::from_data(TensorData::new(masks, [n, h, w]), device),
        }
    }
}

impl<B: Backend> Batcher<B, DepthSample, DepthBatch<B>> for SampleBatcher {
    fn batch(&self, items: Vec<DepthSample>, device: &B::Device) -> DepthBatch<B> {
        let (images, depth, [n, h, w]) = stack_depth(&items);
        DepthBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            depth: Tensor::from_data(TensorData::new(depth, [n, 1, h, w]), device),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Augmentation

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
        Some(if flips(self.seed, index) {
            item.flip_horizontal()
        } else {
            item
        })
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

/// One of the examples' host-side metrics ([`HostMetric`]) as a burn-train metric: the last
/// batch's value as the current value (with its weight, where it has one, so that burn's own
/// epoch aggregate is a proper mean), the epoch's so far as the running value.
#[derive(Clone)]
pub struct ExampleMetric<S>(S);

/// The loss, per batch and as the batch-size weighted mean over the epoch.
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

impl<S: HostMetric> Metric for ExampleMetric<S> {
    type Input = S::Input;

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

    fn update(&mut self, item: &S::Input, _: &MetricMetadata) -> SerializedEntry {
        self.0.add(item);
        let (batch, _) = self.0.batch_value();
        SerializedEntry::new(
            entry_text(
                self.0.name(),
                batch,
                self.0.epoch_value(),
                self.0.precision(),
            ),
            self.value().serialize(),
        )
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

impl<S: HostMetric> Numeric for ExampleMetric<S> {
    fn value(&self) -> NumericEntry {
        match self.0.batch_value() {
            (value, Some(count)) => NumericEntry::Aggregated {
                aggregated_value: value,
                count,
            },
            (value, None) => NumericEntry::Value(value),
        }
    }

    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.0.epoch_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SyntheticDepth, SyntheticSegmentation};

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
