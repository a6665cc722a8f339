//! What the training examples share: the backend choice, a burn-train metric logger that keeps
//! the per-epoch curves in memory, the JSON log and PNG plot written at the end, and the
//! `--check-determinism` driver that trains twice in two child processes and compares hashes.

use crate::plot::{line_panel, Canvas, Series};
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::{Dataset, InMemDataset};
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::MetricLogger;
use burn::train::metric::store::{EpochSummary, MetricsUpdate, Split};
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn_deterministic_vision::train::{HorizontalFlip, RandomFlip, SampleBatcher};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The inner backend the decorator wraps, each behind its cargo feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// burn-ndarray on the CPU (feature `ndarray`, on by default).
    Ndarray,
    /// burn-flex on the CPU (feature `flex`).
    Flex,
    /// wgpu, pinned to the Vulkan API (feature `wgpu`).
    Wgpu,
    /// CUDA (feature `cuda`).
    Cuda,
}

impl BackendChoice {
    pub fn name(self) -> &'static str {
        match self {
            Self::Ndarray => "ndarray",
            Self::Flex => "flex",
            Self::Wgpu => "wgpu",
            Self::Cuda => "cuda",
        }
    }
}

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
        let (panel_w, panel_h, columns) = (420i64, 260i64, 2i64);
        let rows = (names.len() as i64 + columns - 1).max(columns) / columns;
        let header = 40;
        let mut canvas = Canvas::new(
            (panel_w * columns) as usize,
            (header + panel_h * rows) as usize,
        );
        canvas.text(
            10,
            10,
            &format!("{} on {}", self.example, self.backend.name()),
            crate::plot::BLACK,
            2,
        );
        for (i, name) in names.iter().enumerate() {
            let series: Vec<Series> = ["train", "valid"]
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
                .collect();
            let (col, row) = (i as i64 % columns, i as i64 / columns);
            line_panel(
                &mut canvas,
                (col * panel_w, header + row * panel_h, panel_w, panel_h),
                name,
                &series,
            );
        }
        let path = dir.join("curves.png");
        canvas.write_png(&path)?;
        Ok(path)
    }
}

/// Runs this program twice as child processes with the same arguments (minus
/// `--check-determinism`, plus `--output-dir DIR/run-N`), reads both `log.json`s and compares
/// the parameter hashes. Returns whether they are equal. Each child gets a new empty CubeCL
/// autotune cache (`DIR/run-N/autotune`), so in a build with autotune the two runs tune
/// independently and cannot agree by reading one cache.
pub fn check_determinism(output_dir: &Path) -> std::io::Result<bool> {
    let exe = std::env::current_exe()?;
    let mut args: Vec<String> = Vec::new();
    let mut skip_next = false;
    for arg in std::env::args().skip(1) {
        if skip_next {
            skip_next = false;
        } else if arg == "--check-determinism" {
        } else if arg == "--output-dir" {
            skip_next = true;
        } else if !arg.starts_with("--output-dir=") {
            args.push(arg);
        }
    }
    let mut hashes = Vec::new();
    for run in 1..=2 {
        let dir = output_dir.join(format!("run-{run}"));
        eprintln!(
            "determinism check: run {run} of 2 in a new process ({})",
            dir.display()
        );
        let autotune_cache = dir.join("autotune");
        if autotune_cache.exists() {
            std::fs::remove_dir_all(&autotune_cache)?;
        }
        let status = Command::new(&exe)
            .args(&args)
            .arg("--output-dir")
            .arg(&dir)
            .env(crate::processes::AUTOTUNE_CACHE_ENV, &autotune_cache)
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other(format!("run {run} failed: {status}")));
        }
        hashes.push(RunLog::read_json(&dir)?.parameter_sha256);
    }
    println!("run 1 parameters SHA-256: {}", hashes[0]);
    println!("run 2 parameters SHA-256: {}", hashes[1]);
    Ok(hashes[0] == hashes[1])
}

/// The run settings every training example shares, nested as `run` in each example's Burn
/// `Config` (and so in its `config.json`).
#[derive(burn::config::Config, Debug)]
pub struct RunConfig {
    #[config(default = 10)]
    pub epochs: usize,
    #[config(default = 8)]
    pub batch_size: usize,
    /// Side of the square synthetic images (a multiple of 8).
    #[config(default = 64)]
    pub image_size: usize,
    #[config(default = 256)]
    pub train_size: usize,
    #[config(default = 64)]
    pub valid_size: usize,
    #[config(default = 3e-3)]
    pub learning_rate: f64,
    #[config(default = 42)]
    pub seed: u64,
    /// A folder with `train/` and `valid/` subfolders of PNGs instead of synthetic data.
    pub data_dir: Option<String>,
}

impl RunConfig {
    /// Applies the command-line options that were given, then checks the result.
    pub fn apply(&mut self, args: &CommonArgs) -> Result<(), String> {
        self.epochs = args.epochs.unwrap_or(self.epochs);
        self.batch_size = args.batch_size.unwrap_or(self.batch_size);
        self.image_size = args.image_size.unwrap_or(self.image_size);
        self.train_size = args.train_size.unwrap_or(self.train_size);
        self.valid_size = args.valid_size.unwrap_or(self.valid_size);
        self.learning_rate = args.learning_rate.unwrap_or(self.learning_rate);
        self.seed = args.seed.unwrap_or(self.seed);
        if let Some(dir) = &args.data_dir {
            self.data_dir = Some(dir.display().to_string());
        }
        if self.image_size == 0 || !self.image_size.is_multiple_of(8) {
            return Err(format!(
                "--image-size must be a positive multiple of 8, got {}",
                self.image_size
            ));
        }
        if self.batch_size == 0 || self.epochs == 0 {
            return Err("--batch-size and --epochs must be positive".into());
        }
        Ok(())
    }

    /// Seed of the synthetic validation scenes: a different stream than the training scenes.
    pub fn validation_seed(&self) -> u64 {
        self.seed ^ 0x005E_ED0F_FA11
    }

    /// The learner's loaders: training shuffled by the seed with the seeded flip augmentation,
    /// validation in order.
    ///
    /// One loader thread (no `num_workers`): burn's multi-worker loader yields batches in the
    /// order the workers finish them, which changes the data order from run to run.
    #[allow(clippy::type_complexity)]
    pub fn loaders<B, I, TrainBatch, ValidBatch>(
        &self,
        train: Samples<I>,
        valid: Samples<I>,
        device: &B::Device,
    ) -> (
        Arc<dyn DataLoader<B, TrainBatch>>,
        Arc<dyn DataLoader<B::InnerBackend, ValidBatch>>,
    )
    where
        B: AutodiffBackend,
        I: HorizontalFlip + Clone + std::fmt::Debug + Send + Sync + 'static,
        SampleBatcher: Batcher<B, I, TrainBatch> + Batcher<B::InnerBackend, I, ValidBatch>,
        TrainBatch: Clone + std::fmt::Debug + Send + 'static,
        ValidBatch: Clone + std::fmt::Debug + Send + 'static,
    {
        let loader_train = DataLoaderBuilder::<B, _, _>::new(SampleBatcher)
            .batch_size(self.batch_size)
            .shuffle(self.seed)
            .set_device(device.clone())
            .build(RandomFlip {
                inner: train,
                seed: self.seed,
            });
        let loader_valid = DataLoaderBuilder::<B::InnerBackend, _, _>::new(SampleBatcher)
            .batch_size(self.batch_size)
            .set_device(device.clone())
            .build(valid);
        (loader_train, loader_valid)
    }
}

/// Samples held in memory, shared by the learner's loaders and the final evaluation.
pub type Samples<I> = Arc<InMemDataset<I>>;

/// Reads every item of `data` into memory.
pub fn in_memory<I: Clone + Send + Sync>(data: &dyn Dataset<I>) -> Samples<I> {
    Arc::new(InMemDataset::new(
        (0..data.len()).filter_map(|i| data.get(i)).collect(),
    ))
}

/// Command-line options shared by the training examples. Options left out keep the value of the
/// example's Burn `Config` (its defaults, or the file given with `--config`).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Inner backend wrapped by the decorator (each needs its cargo feature).
    #[arg(long, value_enum, default_value_t = BackendChoice::Flex)]
    pub backend: BackendChoice,
    /// Start from a saved config (JSON, as written to OUTPUT_DIR/config.json).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub epochs: Option<usize>,
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Side of the square synthetic images (a multiple of 8).
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Number of synthetic training images.
    #[arg(long)]
    pub train_size: Option<usize>,
    /// Number of synthetic validation images.
    #[arg(long)]
    pub valid_size: Option<usize>,
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// Seeds parameters (`B::seed`), data generation, shuffling and augmentation.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Train on a folder of PNGs instead (DIR/train and DIR/valid; see the README).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Where the config, log.json, curves.png and burn-train's logs go.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Train twice, in two new processes, and exit with status 1 unless the parameter hashes of
    /// the two runs are identical.
    #[arg(long)]
    pub check_determinism: bool,
    /// Train data-parallel on this many devices of the backend: every device takes its own
    /// batch each step, gradients are summed on the first in device order (the same bits every
    /// run). CUDA takes GPUs 0..N; CPU backends run one worker thread per "device" on the one
    /// CPU device; wgpu cannot (see the README).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub devices: u16,
}

/// A training example that can run on any autodiff backend.
pub trait Experiment {
    /// Trains on `devices` (one or more; the first is the main device, where the optimizer
    /// steps and validation run).
    fn run<B: burn::tensor::backend::AutodiffBackend>(
        &self,
        devices: Vec<B::Device>,
        backend: BackendChoice,
    ) -> RunLog;
}

/// The training strategy for `devices`: burn-train's single-device loop for one device, and for
/// several [`FixedOrderDataParallel`](crate::data_parallel::FixedOrderDataParallel): every
/// device takes its own batch each step, the gradients are summed on the first device in device
/// order (burn-train's own `MultiDevice` sums them in the order the workers finish, which with
/// three or more devices can change the last bits from run to run), the optimizer steps there.
pub fn training_strategy<LC: burn::train::LearningComponentsTypes + 'static>(
    devices: Vec<burn::tensor::Device<burn::train::TrainingBackend<LC>>>,
) -> burn::train::TrainingStrategy<LC> {
    use burn::train::{ExecutionStrategy, TrainingStrategy};
    match devices.len() {
        1 => TrainingStrategy::Default(ExecutionStrategy::SingleDevice(devices[0].clone())),
        _ => TrainingStrategy::Custom(std::sync::Arc::new(
            crate::data_parallel::FixedOrderDataParallel::new(devices),
        )),
    }
}

/// Why `--devices` above 1 is refused on wgpu. Found by running it: burn-cubecl 0.21 moves a
/// tensor to another device with CubeCL's server-to-server transfer (`to_client_tensor`)
/// whatever the runtime, and CubeCL 0.10's wgpu runtime leaves that transfer
/// `unimplemented!()` (`comm_init`, `send`, `recv`). The panics happen on the device threads,
/// and the training went on with garbage: below-chance mIoU, different parameters every run.
/// The cause lies below the decorator: plain `Wgpu` has it too.
pub const WGPU_SINGLE_DEVICE: &str = "--devices above 1 is not available on wgpu: Burn 0.21 \
    cannot move a tensor between two wgpu devices (CubeCL 0.10's wgpu runtime has no \
    server-to-server transfer), and data-parallel training moves the model and the \
    gradients between devices";

/// Runs `experiment` on `Autodiff<DeterministicBackend<chosen backend>>`, or explains which
/// cargo feature the choice needs.
// Each arm returns from one of two `cfg` branches; the `return`s keep them symmetric.
#[allow(clippy::needless_return)]
pub fn run_on_backend<E: Experiment>(
    experiment: &E,
    backend: BackendChoice,
    devices: usize,
) -> Result<RunLog, String> {
    #[allow(unused_imports)]
    use burn::backend::Autodiff;
    #[allow(unused_imports)]
    use burn_deterministic::DeterministicBackend;
    #[allow(unused_variables)]
    let missing = |feature: &str| {
        Err(format!(
            "backend {} needs the cargo feature `{feature}` (add `--features {feature}`)",
            backend.name()
        ))
    };
    match backend {
        BackendChoice::Ndarray => {
            #[cfg(feature = "ndarray")]
            return Ok(
                experiment.run::<Autodiff<DeterministicBackend<burn::backend::NdArray>>>(
                    vec![Default::default(); devices],
                    backend,
                ),
            );
            #[cfg(not(feature = "ndarray"))]
            return missing("ndarray");
        }
        BackendChoice::Flex => {
            #[cfg(feature = "flex")]
            return Ok(
                experiment.run::<Autodiff<DeterministicBackend<burn::backend::Flex>>>(
                    vec![Default::default(); devices],
                    backend,
                ),
            );
            #[cfg(not(feature = "flex"))]
            return missing("flex");
        }
        BackendChoice::Wgpu => {
            #[cfg(feature = "wgpu")]
            {
                if devices > 1 {
                    return Err(WGPU_SINGLE_DEVICE.into());
                }
                let device = crate::wgpu_setup::vulkan_device()
                    .ok_or("no Vulkan adapter for wgpu (install mesa-vulkan-drivers)")?;
                return Ok(
                    experiment.run::<Autodiff<DeterministicBackend<burn::backend::Wgpu>>>(
                        vec![device],
                        backend,
                    ),
                );
            }
            #[cfg(not(feature = "wgpu"))]
            return missing("wgpu");
        }
        BackendChoice::Cuda => {
            #[cfg(feature = "cuda")]
            return Ok(
                experiment.run::<Autodiff<DeterministicBackend<burn::backend::Cuda>>>(
                    (0..devices)
                        .map(burn::backend::cuda::CudaDevice::new)
                        .collect(),
                    backend,
                ),
            );
            #[cfg(not(feature = "cuda"))]
            return missing("cuda");
        }
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
    let json = log.write_json(dir)?;
    let plot = log.write_plot(dir)?;
    println!("wrote {} and {}", json.display(), plot.display());
    Ok(())
}

/// The flow every training example's `main` shares: `--check-determinism` (two child processes),
/// or save the config, build the experiment, train on the chosen backend, report. Errors end the
/// process with status 2, a failed determinism check with status 1.
pub fn run_example<E: Experiment>(
    common: &CommonArgs,
    example: &str,
    save_config: impl FnOnce(&Path) -> std::io::Result<()>,
    build: impl FnOnce(PathBuf) -> Result<E, String>,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let fail = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    };
    // Before any device exists: CubeCL reads its configuration once.
    crate::processes::pin_autotune_cache_from_env();
    let output_dir = common
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/runs").join(example));
    if common.check_determinism {
        return match check_determinism(&output_dir) {
            Ok(true) => {
                println!("determinism check passed: identical parameters");
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("determinism check FAILED: the parameter hashes differ");
                ExitCode::from(1)
            }
            Err(e) => fail(e.to_string()),
        };
    }
    if let Err(e) = std::fs::create_dir_all(&output_dir) {
        return fail(format!("cannot create {}: {e}", output_dir.display()));
    }
    if let Err(e) = save_config(&output_dir.join("config.json")) {
        return fail(format!("cannot write config.json: {e}"));
    }
    let experiment = match build(output_dir.clone()) {
        Ok(experiment) => experiment,
        Err(message) => return fail(message),
    };
    match run_on_backend(&experiment, common.backend, common.devices.into()) {
        Ok(log) => match report(&log, &output_dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(format!("cannot write the results: {e}")),
        },
        Err(message) => fail(message),
    }
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
        };
        log.write_json(&dir).unwrap();
        let back = RunLog::read_json(&dir).unwrap();
        assert_eq!(back.epochs, log.epochs);
        assert_eq!(back.parameter_sha256, log.parameter_sha256);
        let plot = log.write_plot(&dir).unwrap();
        assert!(std::fs::metadata(plot).unwrap().len() > 1000);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
