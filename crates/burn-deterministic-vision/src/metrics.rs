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
}
