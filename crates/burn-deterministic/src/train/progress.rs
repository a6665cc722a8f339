//! Training progress as a few plain lines, for logs: burn-train 0.21's own renderer without a
//! terminal prints a `Debug` dump of every iteration.

use burn::data::dataloader::Progress;
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::LearnerSummary;
use std::collections::HashMap;
use std::time::Instant;

/// A burn-train metrics renderer that prints, per epoch, up to three progress lines (at a
/// quarter, half and three quarters of the training items) and one line with the epoch's
/// train and validation metrics (burn-train's running means) and its time; then burn-train's
/// summary. Readable in a CI log or a file, where the terminal dashboard cannot draw.
///
/// ```text
/// epoch 1/10: 50% of the training items (128/256)
/// epoch 1/10 (8.4 s) train: Loss 1.9021, mIoU 12.3 | valid: Loss 1.5210, mIoU 20.4
/// ```
///
/// Keep burn-train's dashboard in a terminal and use this one elsewhere:
///
/// ```rust
/// use burn_deterministic::train::PlainProgress;
/// use std::io::IsTerminal;
///
/// let plain = (!std::io::stdout().is_terminal()).then(PlainProgress::new);
/// // if let Some(plain) = plain { training = training.renderer(plain); }
/// # drop(plain);
/// ```
#[derive(Debug)]
pub struct PlainProgress {
    names: HashMap<MetricId, String>,
    /// The metrics, by name.
    order: Vec<MetricId>,
    epoch: Option<Progress>,
    started: Instant,
    quarters_printed: usize,
    train: EpochMeans,
    valid: EpochMeans,
}

impl Default for PlainProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl PlainProgress {
    /// A renderer that has printed nothing yet.
    pub fn new() -> Self {
        Self {
            names: HashMap::new(),
            order: Vec::new(),
            epoch: None,
            started: Instant::now(),
            quarters_printed: 0,
            train: EpochMeans::default(),
            valid: EpochMeans::default(),
        }
    }

    /// A training item of `epoch` arrived: the line of the epoch before it is due once
    /// `epoch` is a new one.
    fn enter_epoch(&mut self, epoch: &Progress) {
        let same = self
            .epoch
            .as_ref()
            .is_some_and(|current| current.items_processed == epoch.items_processed);
        if !same {
            self.finish_epoch();
            self.epoch = Some(epoch.clone());
            self.started = Instant::now();
            self.quarters_printed = 0;
        }
    }

    /// Prints the current epoch's line, if an epoch is open.
    fn finish_epoch(&mut self) {
        let Some(epoch) = self.epoch.take() else {
            return;
        };
        let train = self.train.line(&self.order, &self.names);
        let valid = self.valid.line(&self.order, &self.names);
        println!(
            "epoch {}/{} ({:.1} s) train: {train} | valid: {valid}",
            epoch.items_processed,
            epoch.items_total,
            self.started.elapsed().as_secs_f64()
        );
        self.train = EpochMeans::default();
        self.valid = EpochMeans::default();
    }
}

/// Per metric: the mean over the epoch of the numeric entries seen, or the last formatted
/// value of a non-numeric metric.
#[derive(Debug, Default)]
struct EpochMeans {
    sums: HashMap<MetricId, (f64, f64)>,
    formatted: HashMap<MetricId, String>,
}

impl EpochMeans {
    fn update(&mut self, state: MetricState) {
        match state {
            MetricState::Numeric(entry, value) => {
                let (value, weight) = match value {
                    NumericEntry::Value(value) => (value, 1.0),
                    NumericEntry::Aggregated {
                        aggregated_value,
                        count,
                    } => (aggregated_value, count as f64),
                };
                let sum = self.sums.entry(entry.metric_id).or_default();
                sum.0 += value * weight;
                sum.1 += weight;
            }
            MetricState::Generic(entry) => {
                self.formatted
                    .insert(entry.metric_id, entry.serialized_entry.formatted);
            }
        }
    }

    fn line(&self, order: &[MetricId], names: &HashMap<MetricId, String>) -> String {
        let values: Vec<String> = order
            .iter()
            .filter_map(|id| {
                let value = match (self.sums.get(id), self.formatted.get(id)) {
                    (Some((sum, weight)), _) if *weight > 0.0 => format!("{:.4}", sum / weight),
                    (_, Some(formatted)) => formatted.clone(),
                    _ => return None,
                };
                Some(format!("{} {value}", names[id]))
            })
            .collect();
        if values.is_empty() {
            "-".to_string()
        } else {
            values.join(", ")
        }
    }
}

impl MetricsRendererTraining for PlainProgress {
    fn update_train(&mut self, state: MetricState) {
        self.train.update(state);
    }

    fn update_valid(&mut self, state: MetricState) {
        self.valid.update(state);
    }

    fn render_train(&mut self, item: TrainingProgress, _indicators: Vec<ProgressType>) {
        self.enter_epoch(&item.global_progress);
        let Some(progress) = item.progress else {
            return;
        };
        if progress.items_total == 0 {
            return;
        }
        let quarters = (progress.items_processed * 4 / progress.items_total).min(3);
        if quarters > self.quarters_printed {
            self.quarters_printed = quarters;
            println!(
                "epoch {}/{}: {}% of the training items ({}/{})",
                item.global_progress.items_processed,
                item.global_progress.items_total,
                quarters * 25,
                progress.items_processed,
                progress.items_total
            );
        }
    }

    fn render_valid(&mut self, _item: TrainingProgress, _indicators: Vec<ProgressType>) {}

    fn on_train_end(
        &mut self,
        summary: Option<LearnerSummary>,
    ) -> Result<(), Box<dyn core::error::Error>> {
        self.finish_epoch();
        if let Some(summary) = summary {
            println!("{summary}");
        }
        Ok(())
    }
}

impl MetricsRendererEvaluation for PlainProgress {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}

    fn render_test(&mut self, _item: EvaluationProgress, _indicators: Vec<ProgressType>) {}
}

impl MetricsRenderer for PlainProgress {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        if !self.names.contains_key(&definition.metric_id) {
            self.order.push(definition.metric_id.clone());
        }
        self.names.insert(definition.metric_id, definition.name);
        // burn-train registers the metrics in a different order from run to run: sorted by
        // name, two runs' lines can be compared.
        let names = &self.names;
        self.order.sort_by(|a, b| names[a].cmp(&names[b]));
    }
}
