//! Training progress as a few plain lines, for logs: burn-train 0.22.1's own renderer without a
//! terminal prints a `Debug` dump of the progress at every item.

use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn::train::metric::store::Split as BurnSplit;
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn::train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};
use burn::train::LearnerSummary;
use burn_deterministic_core::training::{ProgressLines, Split};
use std::time::Instant;

/// A burn-train metrics renderer that prints, per epoch, up to three progress lines (at a
/// quarter, half and three quarters of the training items) and one line with the epoch's train
/// and validation metrics (the mean of each metric's entries, weighted by their counts, or the
/// metric's final value) and its time; then burn-train's summary. Readable in a CI log or a
/// file, where the terminal dashboard cannot draw.
///
/// ```text
/// epoch 1/10: 50% of the training items (128/256)
/// epoch 1/10 (8.4 s) train: Loss 1.9021, mIoU 12.3000 | valid: Loss 1.5210, mIoU 20.4000
/// ```
///
/// Keep burn-train's dashboard in a terminal and use this one elsewhere:
///
/// ```rust
/// use burn_deterministic_tensor::train::PlainProgress;
/// use std::io::IsTerminal;
///
/// let plain = (!std::io::stdout().is_terminal()).then(PlainProgress::new);
/// // if let Some(plain) = plain { training = training.renderer(Box::new(plain)); }
/// # drop(plain);
/// ```
#[derive(Debug)]
pub struct PlainProgress {
    lines: ProgressLines<MetricId>,
    started: Instant,
    total_epochs: usize,
    epoch: usize,
    in_training_split: bool,
    split_items: usize,
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
            total_epochs: 0,
            epoch: 1,
            in_training_split: false,
            split_items: 0,
        }
    }

    /// Prints the open epoch's line, if an epoch is open.
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
            MetricState::Numeric(entry, Some(value)) => {
                let id = &entry.metric_id;
                match value {
                    NumericEntry::Value(value) => self.lines.numeric(split, id, value, 1.0),
                    NumericEntry::Aggregated {
                        aggregated_value,
                        count,
                    } => self
                        .lines
                        .numeric(split, id, aggregated_value, count as f64),
                    NumericEntry::Final(value) => self.lines.final_value(split, id, value),
                }
            }
            MetricState::Numeric(entry, None) | MetricState::Generic(entry) => {
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

impl TrainingProgressLogger for PlainProgress {
    fn start(
        &mut self,
        total_epochs: usize,
        starting_epoch: usize,
        _total_items: Option<usize>,
        _label: Option<&str>,
    ) {
        self.total_epochs = total_epochs;
        self.epoch = starting_epoch;
    }

    fn update_epoch(&mut self, epoch: usize) {
        // burn-train calls this at the end of epoch `epoch`.
        self.finish_epoch();
        self.epoch = epoch + 1;
    }

    fn start_split(&mut self, split: &str, total_items: usize) {
        self.in_training_split = split == <&str>::from(BurnSplit::Train);
        self.split_items = total_items;
        if self.in_training_split {
            self.lines.start_epoch(self.epoch, self.total_epochs);
            self.started = Instant::now();
        }
    }

    fn update_split(&mut self, items_processed: usize) {
        if !self.in_training_split {
            return;
        }
        if let Some(line) = self.lines.train_items(
            self.epoch,
            self.total_epochs,
            items_processed,
            self.split_items,
        ) {
            println!("{line}");
        }
    }

    fn end_split(&mut self) {}

    fn end(&mut self) {}

    fn log_event_training(&mut self, _event: String) {}
}

impl EvaluationProgressLogger for PlainProgress {
    fn start_global_progress(&mut self, _total_tests: usize) {}

    fn start_test(&mut self, _name: &str, _total_items: usize) {}

    fn update_test_progress(&mut self, _items_processed: usize) {}

    fn end_test(&mut self) {}

    fn end_global_progress(&mut self) {}

    fn log_event_evaluation(&mut self, _event: String) {}
}

impl MetricsRendererEvaluation for PlainProgress {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
}

impl MetricsRenderer for PlainProgress {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.lines
            .register(definition.metric_id, definition.name.as_str());
    }
}
