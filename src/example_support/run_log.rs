//! The Burn 0.21 side of a run's report: a burn-train metric logger that feeds the Burn-free
//! curves (`burn_deterministic_vision::run::log`, which also holds the log and its plot).

use burn::train::logger::MetricLogger;
use burn::train::metric::store::{EpochSummary, MetricsUpdate, Split};
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn_deterministic_vision::run::log::Curves;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use burn_deterministic_vision::run::log::{EpochRecord, RunLog, Trained};

/// A [`MetricLogger`] that keeps, per split and epoch, the last running value of every numeric
/// metric (for the examples' metrics: the value over the whole epoch). Clone it before handing
/// it to the learner; the clones share the records.
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

fn entry_value(entry: &NumericEntry) -> f64 {
    match entry {
        NumericEntry::Value(v) => *v,
        NumericEntry::Aggregated {
            aggregated_value, ..
        } => *aggregated_value,
    }
}

impl MetricLogger for CurveLogger {
    fn log(&mut self, update: MetricsUpdate, _epoch: usize, split: &Split) {
        let mut curves = self.curves();
        let split = split.to_string();
        for numeric in &update.entries_numeric {
            curves.log(
                &split,
                &numeric.entry.metric_id,
                entry_value(&numeric.running_entry),
            );
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
        self.curves().define(definition.metric_id, definition.name);
    }

    fn log_epoch_summary(&mut self, summary: EpochSummary) {
        self.curves()
            .end_epoch(summary.epoch_number, &summary.split.to_string());
    }
}
