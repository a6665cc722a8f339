//! What a training run reports: per-epoch curves collected from burn-train's metric loggers,
//! the final validation metrics, the parameter hash and the determinism report; written as
//! `log.json` and `curves.png`.

use crate::plot::{line_panels, Panel, Series};
use crate::run::config::BackendChoice;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::path::{Path, PathBuf};

/// One split's metric values at the end of one epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    pub epoch: usize,
    /// `train` or `valid`.
    pub split: String,
    pub metrics: BTreeMap<String, f64>,
}

/// Per split and epoch, the last running value of every numeric metric (for the examples'
/// metrics: the value over the whole epoch so far), keyed by `K` (each burn-train's metric id)
/// and recorded by name. Each Burn's metric logger feeds one.
#[derive(Debug)]
pub struct Curves<K> {
    names: HashMap<K, String>,
    current: BTreeMap<(String, String), f64>,
    records: Vec<EpochRecord>,
}

impl<K> Default for Curves<K> {
    fn default() -> Self {
        Self {
            names: HashMap::new(),
            current: BTreeMap::new(),
            records: Vec::new(),
        }
    }
}

impl<K: Eq + Hash + std::fmt::Debug> Curves<K> {
    /// Names the metric `id`.
    pub fn define(&mut self, id: K, name: String) {
        self.names.insert(id, name);
    }

    /// The running value of metric `id` in `split`.
    pub fn log(&mut self, split: &str, id: &K, value: f64) {
        let name = self
            .names
            .get(id)
            .cloned()
            .unwrap_or_else(|| format!("{id:?}"));
        self.current.insert((split.to_string(), name), value);
    }

    /// Epoch `epoch` of `split` ended: its values become a record.
    pub fn end_epoch(&mut self, epoch: usize, split: &str) {
        let metrics: BTreeMap<String, f64> = self
            .current
            .iter()
            .filter(|((s, _), _)| s == split)
            .map(|((_, name), v)| (name.clone(), *v))
            .collect();
        self.current.retain(|(s, _), _| s != split);
        self.records.push(EpochRecord {
            epoch,
            split: split.to_string(),
            metrics,
        });
    }

    /// Every record so far.
    pub fn records(&self) -> Vec<EpochRecord> {
        self.records.clone()
    }

    /// The metrics of the last validation epoch — the final model's, over the whole validation
    /// split: the learner validates after every training epoch, so no second pass is needed —
    /// as `(metric name, report name)` pairs. Panics if a metric was not logged: each is one
    /// that the example registered with the learner.
    pub fn final_validation(&self, names: &[(&str, &str)]) -> BTreeMap<String, f64> {
        let last = self
            .records
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

/// What an example's training function returns; [`crate::run::flow::run_example`] adds the
/// example, backend, configuration and report to make the [`RunLog`].
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
    /// The Burn version the example was built on (`0.21`, `0.22`).
    #[serde(default)]
    pub burn: String,
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
    /// What burn-deterministic computed in the run, per device, and the hazards it saw.
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

    /// The log of a finished run in `dir`, checked: the files every run writes are there
    /// (`log.json`, `curves.png`, `config.json`), each split has `epochs` records, and the
    /// parameter hash is a SHA-256.
    pub fn read_finished(dir: &Path, epochs: usize) -> Result<Self, String> {
        for file in ["log.json", "curves.png", "config.json"] {
            if !dir.join(file).is_file() {
                return Err(format!("{file} missing in {}", dir.display()));
            }
        }
        let log = Self::read_json(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for split in ["train", "valid"] {
            let n = log.epochs.iter().filter(|r| r.split == split).count();
            if n != epochs {
                return Err(format!("{n} {split} epochs in the log, not {epochs}"));
            }
        }
        if log.parameter_sha256.len() != 64 {
            return Err(format!("no SHA-256 hash: {}", log.parameter_sha256));
        }
        Ok(log)
    }

    /// How many times the run's devices computed `name` (a line of the determinism report,
    /// such as `resize backward bilinear, dense`).
    pub fn count(&self, name: &str) -> u64 {
        self.determinism["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|device| device["rewrites"][name].as_u64())
            .sum()
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
        let title = format!(
            "{} on {} (Burn {})",
            self.example,
            self.backend.name(),
            self.burn
        );
        let path = dir.join("curves.png");
        line_panels(&title, "epoch", &panels, 2)?.write_png(&path)?;
        Ok(path)
    }
}

/// Prints the run's summary and `report` (the determinism report as text), and writes
/// `log.json` and `curves.png` into `dir`.
pub fn report(log: &RunLog, report: &str, dir: &Path) -> std::io::Result<()> {
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
    println!("{report}");
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
        let mut curves = Curves::default();
        curves.define(7, "Loss".into());
        for (epoch, train, valid) in [(1, 1.0, 1.2), (2, 0.5, 0.7)] {
            curves.log("train", &7, train);
            curves.end_epoch(epoch, "train");
            curves.log("valid", &7, valid);
            curves.end_epoch(epoch, "valid");
        }
        assert_eq!(
            curves.final_validation(&[("Loss", "loss")]),
            BTreeMap::from([("loss".to_string(), 0.7)])
        );
        let log = RunLog {
            example: "test".into(),
            backend: BackendChoice::Flex,
            burn: "0.22".into(),
            devices: 1,
            config: serde_json::json!({"epochs": 2}),
            epochs: curves.records(),
            final_metrics: BTreeMap::from([("mIoU".to_string(), 42.0)]),
            training_seconds: 1.5,
            parameter_sha256: "ab".repeat(32),
            determinism: serde_json::json!({"devices": []}),
        };
        assert_eq!(log.epochs.len(), 4);
        assert_eq!(log.epochs[3].metrics["Loss"], 0.7);
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
