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
