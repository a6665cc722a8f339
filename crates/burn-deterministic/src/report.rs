//! What the decorator did in this process: per device, how many times each rewrite ran, which
//! order hazards were left to the inner backend, and what can still make two runs differ.
//!
//! The counts are kept from the first op on, for the whole process (every thread, every
//! `DeterministicBackend<B>` type); [`report`] takes a snapshot, [`reset`] starts them again.
//! Only rewritten ops, and ops with an order hazard that the configuration left to `B`, are
//! counted: the ops the decorator forwards unchanged cost nothing extra.
//!
//! ```rust
//! # #[cfg(feature = "ndarray")] {
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::module::interpolate;
//! use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
//! use burn::tensor::Tensor;
//! use burn_deterministic::report::{report, Rewrite};
//! use burn_deterministic::{DeterministicBackend, Mode};
//!
//! type Train = Autodiff<DeterministicBackend<NdArray>>;
//! let x = Tensor::<Train, 4>::ones([1, 1, 4, 4], &Default::default()).require_grad();
//! let y = interpolate(x.clone(), [8, 8], InterpolateOptions::new(InterpolateMode::Bilinear));
//! y.sum().backward();
//!
//! let report = report();
//! println!("{report}");
//! let backward = report.devices[0].rewrites.iter().find(|(rewrite, _)| {
//!     matches!(rewrite, Rewrite::ResizeBackward { mode: Mode::Bilinear, .. })
//! });
//! assert!(backward.is_some_and(|(_, count)| *count >= 1));
//! # }
//! ```

use crate::config::{self, DeterministicConfig, RewritePolicy};
use burn_backend::Backend;
use burn_deterministic_core::{Layout, Mode};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// One thing the decorator computes differently from the inner backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rewrite {
    /// An `interpolate` forward computed as `Wh · x · Wwᵀ` (the maps' layouts: height, width).
    ResizeForward {
        /// The interpolation mode.
        mode: Mode,
        /// The height and width maps' layouts.
        layouts: [Layout; 2],
    },
    /// An `interpolate` backward computed as the adjoint `Whᵀ · g · Ww`.
    ResizeBackward {
        /// The interpolation mode.
        mode: Mode,
        /// The height and width maps' layouts.
        layouts: [Layout; 2],
    },
    /// A full `sum()` as the fixed-order tree.
    FixedOrderSum,
    /// A full `mean()` as the fixed-order sum over the count.
    FixedOrderMean,
    /// A `scatter_nd` in rounds, one per occurrence of an index tuple.
    ScatterNdInRounds,
    /// A `deform_conv2d` input gradient as a matmul and ordered scatters.
    DeformConv2dInputGrad,
}

impl fmt::Display for Rewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layouts = |f: &mut fmt::Formatter<'_>, [height, width]: [Layout; 2]| {
            let name = |layout| match layout {
                Layout::Dense => "dense".to_string(),
                Layout::Banded { block_size } => format!("banded({block_size})"),
            };
            if height == width {
                write!(f, "{}", name(height))
            } else {
                write!(f, "height {}, width {}", name(height), name(width))
            }
        };
        match *self {
            Self::ResizeForward { mode, layouts: l } => {
                write!(f, "resize forward {}, ", mode_name(mode))?;
                layouts(f, l)
            }
            Self::ResizeBackward { mode, layouts: l } => {
                write!(f, "resize backward {}, ", mode_name(mode))?;
                layouts(f, l)
            }
            Self::FixedOrderSum => f.write_str("fixed-order sum"),
            Self::FixedOrderMean => f.write_str("fixed-order mean"),
            Self::ScatterNdInRounds => f.write_str("scatter_nd in rounds"),
            Self::DeformConv2dInputGrad => f.write_str("deform_conv2d input gradient"),
        }
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Nearest => "nearest",
        Mode::NearestExact => "nearest-exact",
        Mode::Bilinear => "bilinear",
        Mode::Bicubic => "bicubic",
        Mode::Lanczos3 => "lanczos3",
    }
}

/// What the decorator did on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceReport {
    /// `B::name(device)` of the inner backend.
    pub backend: String,
    /// The device, as its `Debug` prints it.
    pub device: String,
    /// CubeCL autotune is compiled in for this device: kernels can depend on the autotune cache
    /// (see [`crate::determinism::check`]).
    pub autotuned: bool,
    /// Each rewrite applied, with its count, by name.
    pub rewrites: Vec<(Rewrite, u64)>,
    /// Ops with an order hazard on this device that ran on the inner backend because the
    /// configuration said so (`fixed_order_ops: false`), with their count: what can differ
    /// between runs.
    pub left_to_backend: Vec<(Rewrite, u64)>,
}

/// Where the configuration came from, and the settings that switch rewrites off.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConfigurationReport {
    /// `BURN_DETERMINISTIC_CONFIG` is set.
    pub environment: bool,
    /// It is set and invalid (the defaults ran): the error.
    pub environment_error: Option<String>,
    /// [`crate::set_config`] was called.
    pub set_config: bool,
    /// A [`crate::with_config`] scope ran.
    pub scoped: bool,
    /// The process configuration now (outside any scope).
    pub process: DeterministicConfig,
}

/// A snapshot of what the decorator did in this process: see the [module](self).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeterminismReport {
    /// Per device that the decorator rewrote an op on (or left a hazard on), in the order
    /// first seen.
    pub devices: Vec<DeviceReport>,
    /// Where the configuration came from.
    pub configuration: ConfigurationReport,
}

impl DeterminismReport {
    /// What can still make two runs of this process differ, one sentence each: an autotuned
    /// device, ops with an order hazard left to the inner backend, a configuration that turns
    /// the rewrites off, an invalid environment variable. Empty when none was seen.
    pub fn hazards(&self) -> Vec<String> {
        let mut hazards = Vec::new();
        for device in &self.devices {
            if device.autotuned {
                hazards.push(format!(
                    "{} ({}): CubeCL autotune is compiled in; kernels depend on the autotune cache",
                    device.backend, device.device
                ));
            }
            for (op, count) in &device.left_to_backend {
                hazards.push(format!(
                    "{} ({}): {count} × {op} left to the backend (fixed_order_ops off)",
                    device.backend, device.device
                ));
            }
        }
        let process = &self.configuration.process;
        if process.policy == RewritePolicy::Never {
            hazards.push(
                "the process configuration's policy is `never`: no resize is rewritten".into(),
            );
        }
        if !process.fixed_order_ops {
            hazards.push(
                "the process configuration has fixed_order_ops off: order hazards run on the backend"
                    .into(),
            );
        }
        if let Some(error) = &self.configuration.environment_error {
            hazards.push(format!(
                "invalid BURN_DETERMINISTIC_CONFIG, defaults ran: {error}"
            ));
        }
        hazards
    }

    /// The report as JSON (for a run's log): devices with their rewrite counts by name, the
    /// configuration's sources and the hazards.
    pub fn to_json(&self) -> serde_json::Value {
        let counts = |entries: &[(Rewrite, u64)]| {
            serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(op, count)| (op.to_string(), (*count).into()))
                    .collect(),
            )
        };
        let configuration = &self.configuration;
        serde_json::json!({
            "devices": self.devices.iter().map(|device| serde_json::json!({
                "backend": device.backend,
                "device": device.device,
                "autotuned": device.autotuned,
                "rewrites": counts(&device.rewrites),
                "left_to_backend": counts(&device.left_to_backend),
            })).collect::<Vec<_>>(),
            "configuration": {
                "environment": configuration.environment,
                "environment_error": configuration.environment_error,
                "set_config": configuration.set_config,
                "scoped": configuration.scoped,
                "process": serde_json::to_value(&configuration.process)
                    .unwrap_or(serde_json::Value::Null),
            },
            "hazards": self.hazards(),
        })
    }
}

impl fmt::Display for DeterminismReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "burn-deterministic report")?;
        if self.devices.is_empty() {
            writeln!(f, "  no op rewritten")?;
        }
        for device in &self.devices {
            writeln!(f, "  {} ({})", device.backend, device.device)?;
            for (op, count) in &device.rewrites {
                writeln!(f, "    {count:>8} × {op}")?;
            }
        }
        let configuration = &self.configuration;
        let sources: Vec<&str> = [
            (configuration.environment, "BURN_DETERMINISTIC_CONFIG"),
            (configuration.set_config, "set_config"),
            (configuration.scoped, "with_config scopes"),
        ]
        .into_iter()
        .filter_map(|(used, name)| used.then_some(name))
        .collect();
        if sources.is_empty() {
            writeln!(f, "  configuration: the defaults")?;
        } else {
            writeln!(f, "  configuration from: {}", sources.join(", "))?;
        }
        let hazards = self.hazards();
        if hazards.is_empty() {
            write!(f, "  hazards: none seen")
        } else {
            write!(f, "  hazards:")?;
            for hazard in hazards {
                write!(f, "\n    {hazard}")?;
            }
            Ok(())
        }
    }
}

/// The counts of one device.
struct DeviceCounts {
    backend: String,
    autotuned: bool,
    rewrites: HashMap<Rewrite, u64>,
    left_to_backend: HashMap<Rewrite, u64>,
}

/// Per `(backend type, device)`, in the order first seen.
static COUNTS: Mutex<Vec<((&'static str, String), DeviceCounts)>> = Mutex::new(Vec::new());

/// Counts `rewrite` on `device`: applied, or (`applied: false`) an op with an order hazard that
/// the configuration left to `B`. One lock and one formatted device name per op rewritten: the
/// rewritten ops are GEMM chains and tree reductions, many times that.
pub(crate) fn record<B: Backend>(device: &B::Device, rewrite: Rewrite, applied: bool) {
    let key = (core::any::type_name::<B>(), format!("{device:?}"));
    let mut counts = COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    let index = match counts.iter().position(|(seen, _)| *seen == key) {
        Some(index) => index,
        None => {
            let entry = DeviceCounts {
                backend: B::name(device),
                autotuned: crate::device_profile(device).autotuned,
                rewrites: HashMap::new(),
                left_to_backend: HashMap::new(),
            };
            counts.push((key, entry));
            counts.len() - 1
        }
    };
    let entry = &mut counts[index].1;
    let table = if applied {
        &mut entry.rewrites
    } else {
        &mut entry.left_to_backend
    };
    *table.entry(rewrite).or_default() += 1;
}

/// What the decorator did in this process so far: see the [module](self).
pub fn report() -> DeterminismReport {
    let sorted = |table: &HashMap<Rewrite, u64>| {
        let mut entries: Vec<(Rewrite, u64)> = table.iter().map(|(k, v)| (*k, *v)).collect();
        entries.sort_by_key(|(op, _)| op.to_string());
        entries
    };
    let devices = COUNTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|((_, device), counts)| DeviceReport {
            backend: counts.backend.clone(),
            device: device.clone(),
            autotuned: counts.autotuned,
            rewrites: sorted(&counts.rewrites),
            left_to_backend: sorted(&counts.left_to_backend),
        })
        .collect();
    let sources = config::sources();
    DeterminismReport {
        devices,
        configuration: ConfigurationReport {
            environment: sources.environment,
            environment_error: config::environment_error().map(|e| e.to_string()),
            set_config: sources.set_config,
            scoped: sources.scoped,
            process: config::process(),
        },
    }
}

/// Forgets every count (the configuration sources stay: they describe the process).
pub fn reset() {
    COUNTS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Counts one made-up rewrite on a made-up backend: what [`record`] costs per rewritten op,
/// for the benchmark that compares it with a training step. Not part of the API.
#[doc(hidden)]
pub fn record_for_benchmark<B: Backend>(device: &B::Device) {
    record::<B>(device, Rewrite::FixedOrderSum, true);
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::module::interpolate;
    use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
    use burn::tensor::Tensor;

    type Train = Autodiff<crate::DeterministicBackend<Flex>>;

    fn count(report: &DeterminismReport, wanted: impl Fn(&Rewrite) -> bool) -> u64 {
        report
            .devices
            .iter()
            .filter(|device| device.backend.contains("flex"))
            .flat_map(|device| &device.rewrites)
            .filter(|(rewrite, _)| wanted(rewrite))
            .map(|(_, count)| count)
            .sum()
    }

    /// A forward and backward of each mode appear in the counts with their layouts; the JSON
    /// and the text carry them.
    #[test]
    fn resizes_are_counted_by_mode_and_layout() {
        let device = Default::default();
        let backward_of = |mode| move |rewrite: &Rewrite| matches!(rewrite, Rewrite::ResizeBackward { mode: m, layouts: [Layout::Dense, Layout::Dense] } if *m == mode);
        let before = count(&report(), backward_of(Mode::Bicubic));
        let x = Tensor::<Train, 4>::ones([1, 2, 5, 6], &device).require_grad();
        let y = interpolate(x, [9, 4], InterpolateOptions::new(InterpolateMode::Bicubic));
        y.sum().backward();
        let after = report();
        // Other tests of this process may resize too: at least this one.
        assert!(count(&after, backward_of(Mode::Bicubic)) > before);
        let text = after.to_string();
        assert!(text.contains("resize backward bicubic, dense"), "{text}");
        let json = after.to_json();
        let flex = json["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["backend"].as_str().unwrap().contains("flex"))
            .unwrap();
        assert!(
            flex["rewrites"]["resize backward bicubic, dense"]
                .as_u64()
                .unwrap()
                >= 1
        );
        assert_eq!(flex["autotuned"], false);
    }

    #[test]
    fn layouts_and_hazards_read_as_sentences() {
        let banded = Rewrite::ResizeForward {
            mode: Mode::Lanczos3,
            layouts: [Layout::Banded { block_size: 4 }, Layout::Dense],
        };
        assert_eq!(
            banded.to_string(),
            "resize forward lanczos3, height banded(4), width dense"
        );
        let report = DeterminismReport {
            devices: vec![DeviceReport {
                backend: "fusion<cubecl<wgpu>>".into(),
                device: "DefaultDevice".into(),
                autotuned: true,
                rewrites: vec![],
                left_to_backend: vec![(Rewrite::FixedOrderSum, 3)],
            }],
            configuration: ConfigurationReport {
                environment: false,
                environment_error: None,
                set_config: true,
                scoped: false,
                process: DeterministicConfig::default().with_fixed_order_ops(false),
            },
        };
        let hazards = report.hazards();
        assert_eq!(hazards.len(), 3, "{hazards:?}");
        assert!(hazards[0].contains("autotune"));
        assert!(hazards[1].contains("3 × fixed-order sum left to the backend"));
        assert!(hazards[2].contains("fixed_order_ops off"));
        assert!(report
            .to_string()
            .contains("configuration from: set_config"));
        assert_eq!(report.to_json()["hazards"].as_array().unwrap().len(), 3);
    }
}
