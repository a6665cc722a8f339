//! Metrics computed on the host from predictions and ground truth.

/// Confusion-matrix based segmentation metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentationMetrics {
    /// Mean IoU over the classes present in the ground truth or the prediction.
    pub miou: f64,
    pub pixel_accuracy: f64,
    /// Per-class IoU (`None` for a class absent from both).
    pub iou: Vec<Option<f64>>,
}

/// Accumulates a confusion matrix over batches.
#[derive(Debug, Clone)]
pub struct Confusion {
    classes: usize,
    counts: Vec<u64>, // [truth * classes + predicted]
}

impl Confusion {
    pub fn new(classes: usize) -> Self {
        Self {
            classes,
            counts: vec![0; classes * classes],
        }
    }

    /// Adds per-pixel predicted and true class ids (same length).
    pub fn add(&mut self, predicted: &[usize], truth: &[usize]) {
        assert_eq!(
            predicted.len(),
            truth.len(),
            "prediction and truth sizes differ"
        );
        for (&p, &t) in predicted.iter().zip(truth) {
            assert!(
                p < self.classes && t < self.classes,
                "class id out of range"
            );
            self.counts[t * self.classes + p] += 1;
        }
    }

    pub fn metrics(&self) -> SegmentationMetrics {
        let k = self.classes;
        let at = |t: usize, p: usize| self.counts[t * k + p] as f64;
        let total: f64 = self.counts.iter().map(|c| *c as f64).sum();
        let correct: f64 = (0..k).map(|c| at(c, c)).sum();
        let iou: Vec<Option<f64>> = (0..k)
            .map(|c| {
                let truth: f64 = (0..k).map(|p| at(c, p)).sum();
                let predicted: f64 = (0..k).map(|t| at(t, c)).sum();
                let union = truth + predicted - at(c, c);
                (union > 0.0).then(|| at(c, c) / union)
            })
            .collect();
        let present: Vec<f64> = iou.iter().flatten().copied().collect();
        SegmentationMetrics {
            miou: if present.is_empty() {
                0.0
            } else {
                present.iter().sum::<f64>() / present.len() as f64
            },
            pixel_accuracy: if total > 0.0 { correct / total } else { 0.0 },
            iou,
        }
    }
}

/// Depth metrics over valid pixels (ground truth > 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DepthMetrics {
    /// Fraction of pixels with `max(p/g, g/p) < 1.25`.
    pub delta1: f64,
    /// Mean `|p − g| / g`.
    pub abs_rel: f64,
    /// `sqrt(mean (p − g)²)`.
    pub rmse: f64,
    pub valid_pixels: usize,
}

/// Depth metrics of `predicted` against `truth`; pixels with `truth <= 0` are invalid holes.
pub fn depth_metrics(predicted: &[f32], truth: &[f32]) -> DepthMetrics {
    assert_eq!(
        predicted.len(),
        truth.len(),
        "prediction and truth sizes differ"
    );
    let (mut within, mut abs_rel, mut squared, mut n) = (0usize, 0.0f64, 0.0f64, 0usize);
    for (&p, &g) in predicted.iter().zip(truth) {
        if g <= 0.0 {
            continue;
        }
        let (p, g) = (p as f64, g as f64);
        if (p / g).max(g / p) < 1.25 {
            within += 1;
        }
        abs_rel += (p - g).abs() / g;
        squared += (p - g) * (p - g);
        n += 1;
    }
    let n_f = n.max(1) as f64;
    DepthMetrics {
        delta1: within as f64 / n_f,
        abs_rel: abs_rel / n_f,
        rmse: (squared / n_f).sqrt(),
        valid_pixels: n,
    }
}

/// Accumulates depth metrics over images, optionally after per-image median scaling.
///
/// A model trained with a scale-invariant loss predicts depth up to a global scale; the usual
/// evaluation (Eigen et al.; Monodepth) first multiplies each prediction by
/// `median(truth) / median(prediction)` over the valid pixels, which is what `median_scaling`
/// does.
#[derive(Debug, Clone, Default)]
pub struct DepthAccumulator {
    median_scaling: bool,
    within: f64,
    abs_rel: f64,
    squared: f64,
    valid: usize,
}

impl DepthAccumulator {
    pub fn new(median_scaling: bool) -> Self {
        Self {
            median_scaling,
            ..Self::default()
        }
    }

    /// Adds one image: `predicted` and `truth` of the same length, `truth <= 0` marks holes.
    pub fn add_image(&mut self, predicted: &[f32], truth: &[f32]) {
        let scale = if self.median_scaling {
            median_ratio(predicted, truth)
        } else {
            1.0
        };
        let scaled: Vec<f32> = predicted.iter().map(|p| p * scale).collect();
        let m = depth_metrics(&scaled, truth);
        let n = m.valid_pixels as f64;
        self.within += m.delta1 * n;
        self.abs_rel += m.abs_rel * n;
        self.squared += m.rmse * m.rmse * n;
        self.valid += m.valid_pixels;
    }

    pub fn metrics(&self) -> DepthMetrics {
        let n = self.valid.max(1) as f64;
        DepthMetrics {
            delta1: self.within / n,
            abs_rel: self.abs_rel / n,
            rmse: (self.squared / n).sqrt(),
            valid_pixels: self.valid,
        }
    }
}

/// `median(truth) / median(predicted)` over the valid pixels (1 when there are none).
fn median_ratio(predicted: &[f32], truth: &[f32]) -> f32 {
    let (mut p, mut g): (Vec<f32>, Vec<f32>) = predicted
        .iter()
        .zip(truth)
        .filter(|(_, &g)| g > 0.0)
        .map(|(&p, &g)| (p, g))
        .unzip();
    if p.is_empty() {
        return 1.0;
    }
    let median = |v: &mut Vec<f32>| {
        v.sort_by(f32::total_cmp);
        v[v.len() / 2]
    };
    let (mp, mg) = (median(&mut p), median(&mut g));
    if mp > 0.0 {
        mg / mp
    } else {
        1.0
    }
}

/// δ1 (in %) of a constant prediction, median-scaled like a model's, over `samples`: what a net
/// that learned nothing about the scenes' geometry scores (the depth examples' reference).
pub fn constant_prediction_delta1(
    samples: impl IntoIterator<Item = crate::data::DepthSample>,
) -> f64 {
    let mut constant = DepthAccumulator::new(true);
    for sample in samples {
        constant.add_image(&vec![1.0; sample.depth.len()], &sample.depth);
    }
    100.0 * constant.metrics().delta1
}

// ---------------------------------------------------------------------------------------------
// What a training step hands to the metrics, read on the host, and the scores kept over an epoch:
// each Burn's burn-train metrics are thin wrappers around these.

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

/// What burn-train displays for one update of a metric: the batch value and the epoch's so far.
pub fn entry_text(name: &str, batch: f64, epoch: f64, precision: usize) -> String {
    format!("{name}: {batch:.precision$} (epoch {epoch:.precision$})")
}

/// One of the examples' metrics, computed on the host from what a training step hands over:
/// what each Burn's burn-train metric wraps (one generic wrapper per Burn, so the arithmetic
/// and the names live here once).
pub trait HostMetric: Clone + Send + Sync + 'static {
    /// What one batch adds.
    type Input: Send + Sync;
    /// The metric's name in logs and curves.
    fn name(&self) -> &'static str;
    /// Its unit, and whether higher is better.
    fn unit_and_direction(&self) -> (Option<&'static str>, bool);
    /// Decimals shown.
    fn precision(&self) -> usize;
    /// A batch: it becomes the last batch and joins the epoch.
    fn add(&mut self, input: &Self::Input);
    /// The last batch's value, and its weight in an epoch mean where it has one (the loss: its
    /// batch size).
    fn batch_value(&self) -> (f64, Option<usize>);
    /// The value over the epoch so far.
    fn epoch_value(&self) -> f64;
    /// A new epoch.
    fn clear(&mut self);
}

/// The loss over an epoch: the batch-size weighted mean, and the last batch.
#[derive(Debug, Clone, Copy)]
pub struct LossMean {
    sum: f64,
    count: usize,
    last: BatchLoss,
}

impl Default for LossMean {
    fn default() -> Self {
        Self {
            sum: 0.0,
            count: 0,
            last: BatchLoss {
                value: f64::NAN,
                batch_size: 0,
            },
        }
    }
}

impl LossMean {
    pub fn add(&mut self, item: &BatchLoss) {
        self.sum += item.value * item.batch_size as f64;
        self.count += item.batch_size;
        self.last = *item;
    }

    /// The batch-size weighted mean so far.
    pub fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }

    /// The last batch added.
    pub fn last(&self) -> BatchLoss {
        self.last
    }
}

impl HostMetric for LossMean {
    type Input = BatchLoss;

    fn name(&self) -> &'static str {
        // As burn-train's own loss metric.
        "Loss"
    }

    fn unit_and_direction(&self) -> (Option<&'static str>, bool) {
        (None, false)
    }

    fn precision(&self) -> usize {
        4
    }

    fn add(&mut self, input: &BatchLoss) {
        LossMean::add(self, input);
    }

    fn batch_value(&self) -> (f64, Option<usize>) {
        (self.last.value, Some(self.last.batch_size))
    }

    fn epoch_value(&self) -> f64 {
        self.mean()
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// Which number a [`SegmentationScore`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentationStatistic {
    MeanIou,
    PixelAccuracy,
}

impl SegmentationStatistic {
    /// The metric's name in logs and curves.
    pub fn name(self) -> &'static str {
        match self {
            Self::MeanIou => "mIoU",
            Self::PixelAccuracy => "Pixel Accuracy",
        }
    }
}

/// mIoU or pixel accuracy (in %): of the last batch, and of the confusion matrix accumulated
/// over the epoch so far.
#[derive(Debug, Clone)]
pub struct SegmentationScore {
    statistic: SegmentationStatistic,
    classes: usize,
    epoch: Confusion,
    batch: Confusion,
}

impl SegmentationScore {
    pub fn new(statistic: SegmentationStatistic, classes: usize) -> Self {
        Self {
            statistic,
            classes,
            epoch: Confusion::new(classes),
            batch: Confusion::new(classes),
        }
    }

    pub fn statistic(&self) -> SegmentationStatistic {
        self.statistic
    }

    /// A batch: it becomes the last batch and joins the epoch.
    pub fn add(&mut self, pixels: &ClassPixels) {
        self.batch = Confusion::new(self.classes);
        self.batch.add(&pixels.predicted, &pixels.truth);
        self.epoch.add(&pixels.predicted, &pixels.truth);
    }

    fn percent(&self, confusion: &Confusion) -> f64 {
        let m = confusion.metrics();
        100.0
            * match self.statistic {
                SegmentationStatistic::MeanIou => m.miou,
                SegmentationStatistic::PixelAccuracy => m.pixel_accuracy,
            }
    }

    pub fn batch_value(&self) -> f64 {
        self.percent(&self.batch)
    }

    pub fn epoch_value(&self) -> f64 {
        self.percent(&self.epoch)
    }

    pub fn clear(&mut self) {
        *self = Self::new(self.statistic, self.classes);
    }
}

impl HostMetric for SegmentationScore {
    type Input = ClassPixels;

    fn name(&self) -> &'static str {
        self.statistic.name()
    }

    fn unit_and_direction(&self) -> (Option<&'static str>, bool) {
        (Some("%"), true)
    }

    fn precision(&self) -> usize {
        2
    }

    fn add(&mut self, pixels: &ClassPixels) {
        SegmentationScore::add(self, pixels);
    }

    fn batch_value(&self) -> (f64, Option<usize>) {
        (SegmentationScore::batch_value(self), None)
    }

    fn epoch_value(&self) -> f64 {
        SegmentationScore::epoch_value(self)
    }

    fn clear(&mut self) {
        SegmentationScore::clear(self);
    }
}

/// Which number a [`DepthScore`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthStatistic {
    /// δ1 in %.
    Delta1,
    AbsRel,
    Rmse,
}

impl DepthStatistic {
    /// The metric's name in logs and curves.
    pub fn name(self) -> &'static str {
        match self {
            Self::Delta1 => "delta1",
            Self::AbsRel => "AbsRel",
            Self::Rmse => "RMSE",
        }
    }

    /// Its unit, and whether higher is better.
    pub fn unit_and_direction(self) -> (Option<&'static str>, bool) {
        match self {
            Self::Delta1 => (Some("%"), true),
            Self::AbsRel => (None, false),
            Self::Rmse => (Some("m"), false),
        }
    }
}

/// δ1, AbsRel or RMSE after per-image median scaling (the scale-invariant loss leaves the global
/// scale free; see [`DepthAccumulator`]): of the last batch, and over the valid pixels of the
/// epoch so far.
#[derive(Debug, Clone)]
pub struct DepthScore {
    statistic: DepthStatistic,
    epoch: DepthAccumulator,
    batch: DepthAccumulator,
}

impl DepthScore {
    pub fn new(statistic: DepthStatistic) -> Self {
        Self {
            statistic,
            epoch: DepthAccumulator::new(true),
            batch: DepthAccumulator::new(true),
        }
    }

    pub fn statistic(&self) -> DepthStatistic {
        self.statistic
    }

    /// A batch: it becomes the last batch and joins the epoch.
    pub fn add(&mut self, images: &DepthImages) {
        self.batch = DepthAccumulator::new(true);
        for (predicted, truth) in images.predicted.iter().zip(&images.truth) {
            self.epoch.add_image(predicted, truth);
            self.batch.add_image(predicted, truth);
        }
    }

    fn value_of(&self, accumulator: &DepthAccumulator) -> f64 {
        let m = accumulator.metrics();
        match self.statistic {
            DepthStatistic::Delta1 => 100.0 * m.delta1,
            DepthStatistic::AbsRel => m.abs_rel,
            DepthStatistic::Rmse => m.rmse,
        }
    }

    pub fn batch_value(&self) -> f64 {
        self.value_of(&self.batch)
    }

    pub fn epoch_value(&self) -> f64 {
        self.value_of(&self.epoch)
    }

    pub fn clear(&mut self) {
        *self = Self::new(self.statistic);
    }
}

impl HostMetric for DepthScore {
    type Input = DepthImages;

    fn name(&self) -> &'static str {
        self.statistic.name()
    }

    fn unit_and_direction(&self) -> (Option<&'static str>, bool) {
        self.statistic.unit_and_direction()
    }

    fn precision(&self) -> usize {
        3
    }

    fn add(&mut self, images: &DepthImages) {
        DepthScore::add(self, images);
    }

    fn batch_value(&self) -> (f64, Option<usize>) {
        (DepthScore::batch_value(self), None)
    }

    fn epoch_value(&self) -> f64 {
        DepthScore::epoch_value(self)
    }

    fn clear(&mut self) {
        DepthScore::clear(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmentation_metrics_by_hand() {
        // truth:     0 0 1 1 2 2
        // predicted: 0 1 1 1 2 0
        let mut confusion = Confusion::new(4);
        confusion.add(&[0, 1, 1, 1, 2, 0], &[0, 0, 1, 1, 2, 2]);
        let m = confusion.metrics();
        // class 0: tp 1, truth 2, predicted 2 -> 1/3; class 1: tp 2, truth 2, pred 3 -> 2/3;
        // class 2: tp 1, truth 2, pred 1 -> 1/2; class 3 absent.
        assert_eq!(
            m.iou,
            vec![Some(1.0 / 3.0), Some(2.0 / 3.0), Some(0.5), None]
        );
        assert!((m.miou - (1.0 / 3.0 + 2.0 / 3.0 + 0.5) / 3.0).abs() < 1e-12);
        assert!((m.pixel_accuracy - 4.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn scores_keep_the_last_batch_and_the_epoch() {
        let mut miou = SegmentationScore::new(SegmentationStatistic::MeanIou, 3);
        // Batch 1: perfect on classes 0 and 1. Batch 2: class 2 predicted as 0.
        miou.add(&ClassPixels {
            predicted: vec![0, 1],
            truth: vec![0, 1],
        });
        assert_eq!((miou.batch_value(), miou.epoch_value()), (100.0, 100.0));
        miou.add(&ClassPixels {
            predicted: vec![0],
            truth: vec![2],
        });
        // Epoch IoU: class 0: 1/2, class 1: 1, class 2: 0 -> mean 1/2. Batch: classes 0 and 2
        // both IoU 0.
        assert_eq!((miou.batch_value(), miou.epoch_value()), (0.0, 50.0));
        miou.clear();
        miou.add(&ClassPixels {
            predicted: vec![2],
            truth: vec![2],
        });
        assert_eq!((miou.batch_value(), miou.epoch_value()), (100.0, 100.0));

        let mut loss = LossMean::default();
        for (value, batch_size) in [(1.0, 3), (3.0, 1)] {
            loss.add(&BatchLoss { value, batch_size });
        }
        assert_eq!(loss.mean(), 1.5);
        assert_eq!(loss.last().value, 3.0);

        let mut delta1 = DepthScore::new(DepthStatistic::Delta1);
        delta1.add(&DepthImages {
            predicted: vec![vec![1.0, 2.0], vec![3.0]],
            truth: vec![vec![2.0, 4.0], vec![3.0]],
        });
        assert_eq!((delta1.batch_value(), delta1.epoch_value()), (100.0, 100.0));
    }

    #[test]
    fn depth_metrics_by_hand_skip_holes() {
        // Ratios 1, 2 and 1.125 (the fourth pixel is a hole): two of three within 1.25.
        let m = depth_metrics(&[1.0, 2.0, 4.5, 9.0], &[1.0, 1.0, 4.0, 0.0]);
        assert_eq!(m.valid_pixels, 3);
        assert!((m.delta1 - 2.0 / 3.0).abs() < 1e-12);
        assert!((m.abs_rel - (0.0 + 1.0 + 0.125) / 3.0).abs() < 1e-12);
        assert!((m.rmse - ((0.0 + 1.0 + 0.25) / 3.0f64).sqrt()).abs() < 1e-12);
        // Exactly 1.25 is not within.
        assert_eq!(depth_metrics(&[5.0], &[4.0]).delta1, 0.0);
    }

    #[test]
    fn depth_accumulator_weights_images_by_valid_pixels_and_median_scales() {
        // Image 1: prediction is truth / 2 everywhere: wrong by 2x unscaled, exact after scaling.
        // Image 2: one valid pixel, exact.
        let mut plain = DepthAccumulator::new(false);
        let mut scaled = DepthAccumulator::new(true);
        for acc in [&mut plain, &mut scaled] {
            acc.add_image(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]);
            acc.add_image(&[5.0, 7.0], &[5.0, 0.0]);
        }
        let m = plain.metrics();
        assert_eq!(m.valid_pixels, 4);
        assert!((m.delta1 - 0.25).abs() < 1e-12);
        assert!((m.abs_rel - (0.5 * 3.0) / 4.0).abs() < 1e-12);
        assert!((m.rmse - ((1.0 + 4.0 + 9.0) / 4.0f64).sqrt()).abs() < 1e-12);
        let m = scaled.metrics();
        assert_eq!(m.delta1, 1.0);
        assert!(m.abs_rel < 1e-7 && m.rmse < 1e-6);
    }
}
