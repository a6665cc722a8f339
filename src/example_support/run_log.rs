//! What a training run reports: per-epoch curves collected from burn-train's metric loggers,
//! the final validation metrics, the parameter hash; written as `log.json` and `curves.png`.

use crate::example_support::devices::BackendChoice;
use crate::example_support::plot::{line_panels, Panel, Series};
use burn::train::logger::MetricLogger;
use burn::train::metric::store::{EpochSummary, MetricsUpdate, Split};
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One split's metric values at the end of one epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    pub epoch: usize,
    /// `train` or `valid`.
    pub split: String,
    pub metrics: BTreeMap<String, f64>,
}

/// A [`MetricLogger`] that keeps, per split and epoch, the last running value of every numeric
/// metric (for this crate's metrics: the value over the whole epoch). Clone it before handing it
/// to the learner; the clones share the records.
#[derive(Clone, Default)]
pub struct CurveLogger {
    state: Arc<Mutex<CurveState>>,
}

#[derive(Default)]
struct CurveState {
    names: HashMap<MetricId, String>,
    current: BTreeMap<(String, String), f64>,
    records: Vec<EpochRecord>,
}

impl CurveLogger {
    pub fn records(&self) -> Vec<EpochRecord> {
        self.state
            .lock()
            .expect("curve logger poisoned")
            .records
            .clone()
    }

    /// The metrics of the last validation epoch — the final model's, over the whole validation
    /// split: the learner validates after every training epoch, so no second pass is needed —
    /// as `(metric name, report name)` pairs. Panics if a metric was not logged: each is one
    /// that the example registered with the learner.
    pub fn final_validation(&self, names: &[(&str, &str)]) -> BTreeMap<String, f64> {
        let records = self.records();
        let last = records
            .iter()
            .rev()
            .find(|record| record.split == "valid")
            .expect("the learner ran no validation epoch");
        names
            .iter()
            .map(|(metric, report_name)| {
                let value = last.metrics.get(*metric).unwrap_or_else(|| {
                    panic!("no validation metric {metric} in {:?}", last.metrics)
                });
                (report_name.to_string(), *value)
            })
            .collect()
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
        let mut state = self.state.lock().expect("curve logger poisoned");
        for numeric in &update.entries_numeric {
            let name = state
                .names
                .get(&numeric.entry.metric_id)
                .cloned()
                .unwrap_or_else(|| format!("{:?}", numeric.entry.metric_id));
            let value = entry_value(&numeric.running_entry);
            state.current.insert((split.to_string(), name), value);
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
        let mut state = self.state.lock().expect("curve logger poisoned");
        state.names.insert(definition.metric_id, definition.name);
    }

    fn log_epoch_summary(&mut self, summary: EpochSummary) {
        let mut state = self.state.lock().expect("curve logger poisoned");
        let split = summary.split.to_string();
        let metrics: BTreeMap<String, f64> = state
            .current
            .iter()
            .filter(|((s, _), _)| *s == split)
            .map(|((_, name), v)| (name.clone(), *v))
            .collect();
        state.current.retain(|(s, _), _| *s != split);
        state.records.push(EpochRecord {
            epoch: summary.epoch_number,
            split,
            metrics,
        });
    }
}

/// What an example's training function returns; [`crate::example_support::flow::run_example`] adds the example,
/// backend and configuration to make the [`RunLog`].
#[derive(Debug, Clone)]
pub struct Trained {
    /// Devices trained on (data-parallel when more than one).
    pub devices: usize,
    pub epochs: Vec<EpochRecord>,
    /// Metrics of the final model on the validation split.
    pub final_metrics: BTreeMap<String, f64>,
    pub training_seconds: f64,
    /// SHA-256 over the bits of every parameter of the final model.
    pub parameter_sha256: String,
}

/// Everything a training run reports, written as `log.json` in the output folder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunLog {
    pub example: String,
    pub backend: BackendChoice,
    /// Devices trained on (data-parallel when more than one).
    pub devices: usize,
    /// The Burn `Config` of the run, as JSON.
    pub config: serde_json::Value,
    pub epochs: Vec<EpochRecord>,
    /// Metrics of the final model on the validation split.
    pub final_metrics: BTreeMap<String, f64>,
    pub training_seconds: f64,
    /// SHA-256 over the bits of every parameter of the final model.
    pub parameter_sha256: String,
    /// What the decorator did in the run, per device, and the hazards it saw
    /// (`burn_deterministic::report`).
    #[serde(default)]
    pub determinism: serde_json::Value,
}

impl RunLog {
    pub fn write_json(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("log.json");
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&path, text)?;
        Ok(path)
    }

    pub fn read_json(dir: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(dir.join("log.json"))?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// One panel per metric, train and valid curves over epochs, as `curves.png`.
    pub fn write_plot(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let mut names: Vec<&String> = self.epochs.iter().flat_map(|r| r.metrics.keys()).collect();
        names.sort();
        names.dedup();
        let panels: Vec<Panel> = names
            .iter()
            .map(|name| Panel {
                title: name.to_string(),
                series: ["train", "valid"]
                    .iter()
                    .map(|split| Series {
                        name: split.to_string(),
                        points: self
                            .epochs
                            .iter()
                            .filter(|r| r.split == *split)
                            .filter_map(|r| r.metrics.get(*name).map(|v| (r.epoch as f64, *v)))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        let title = format!("{} on {}", self.example, self.backend.name());
        let path = dir.join("curves.png");
        line_panels(&title, "epoch", &panels, 2)?.write_png(&path)?;
        Ok(path)
    }
}

/// Prints the run's summary and writes `log.json` and `curves.png` into `dir`.
pub fn report(log: &RunLog, dir: &Path) -> std::io::Result<()> {
    println!();
    println!(
        "{} on {} ({} device{}): final validation metrics",
        log.example,
        log.backend.name(),
        log.devices,
        if log.devices == 1 { "" } else { "s" }
    );
    for (name, value) in &log.final_metrics {
        println!("  {name:<16} {value:.4}");
    }
    println!("training time       {:.1} s", log.training_seconds);
    println!("parameters SHA-256  {}", log.parameter_sha256);
    println!("{}", burn_deterministic::report::report());
    let json = log.write_json(dir)?;
    let plot = log.write_plot(dir)?;
    println!("wrote {} and {}", json.display(), plot.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_log_round_trips_and_plots() {
        let dir = std::env::temp_dir().join(format!("run-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = |epoch, split: &str, loss| EpochRecord {
            epoch,
            split: split.into(),
            metrics: BTreeMap::from([("Loss".to_string(), loss)]),
        };
        let log = RunLog {
            example: "test".into(),
            backend: BackendChoice::Flex,
            devices: 1,
            config: serde_json::json!({"epochs": 2}),
            epochs: vec![
                record(1, "train", 1.0),
                record(1, "valid", 1.2),
                record(2, "train", 0.5),
                record(2, "valid", 0.7),
            ],
            final_metrics: BTreeMap::from([("mIoU".to_string(), 42.0)]),
            training_seconds: 1.5,
            parameter_sha256: "ab".repeat(32),
            determinism: serde_json::json!({"devices": []}),
        };
        log.write_json(&dir).unwrap();
        let back = RunLog::read_json(&dir).unwrap();
        assert_eq!(back.epochs, log.epochs);
        assert_eq!(back.parameter_sha256, log.parameter_sha256);
        assert_eq!(back.determinism, log.determinism);
        let plot = log.write_plot(&dir).unwrap();
        assert!(std::fs::metadata(plot).unwrap().len() > 1000);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
