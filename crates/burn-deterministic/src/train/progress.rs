//! Training progress as a few plain lines, for logs: burn-train 0.21's own renderer without a
//! terminal prints a `Debug` dump of every iteration.

use burn::data::dataloader::Progress;
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::LearnerSummary;
use burn_deterministic_core::training::{ProgressLines, Split};
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
    lines: ProgressLines<MetricId>,
    started: Instant,
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
            lines: ProgressLines::new(),
            started: Instant::now(),
        }
    }

    /// A training item of `epoch` arrived: the line of the epoch before it is due once
    /// `epoch` is a new one.
    fn enter_epoch(&mut self, epoch: &Progress) {
        if self.lines.open_epoch() != Some(epoch.items_processed) {
            self.finish_epoch();
            self.lines
                .start_epoch(epoch.items_processed, epoch.items_total);
            self.started = Instant::now();
        }
    }

    /// Prints the current epoch's line, if an epoch is open.
    fn finish_epoch(&mut self) {
        if let Some(line) = self
            .lines
            .finish_epoch(self.started.elapsed().as_secs_f64())
        {
            println!("{line}");
        }
    }

    fn update(&mut self, split: Split, state: MetricState) {
        match state {
            MetricState::Numeric(entry, value) => {
                let (value, weight) = match value {
                    NumericEntry::Value(value) => (value, 1.0),
                    NumericEntry::Aggregated {
                        aggregated_value,
                        count,
                    } => (aggregated_value, count as f64),
                };
                self.lines.numeric(split, &entry.metric_id, value, weight);
            }
            MetricState::Generic(entry) => {
                self.lines
                    .formatted(split, &entry.metric_id, entry.serialized_entry.formatted);
            }
        }
    }
}

impl MetricsRendererTraining for PlainProgress {
    fn update_train(&mut self, state: MetricState) {
        self.update(Split::Train, state);
    }

    fn update_valid(&mut self, state: MetricState) {
        self.update(Split::Valid, state);
    }

    fn render_train(&mut self, item: TrainingProgress, _indicators: Vec<ProgressType>) {
        self.enter_epoch(&item.global_progress);
        let Some(progress) = item.progress else {
            return;
        };
        if let Some(line) = self.lines.train_items(
            item.global_progress.items_processed,
            item.global_progress.items_total,
            progress.items_processed,
            progress.items_total,
        ) {
            println!("{line}");
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
        self.lines.register(definition.metric_id, definition.name);
    }
}
