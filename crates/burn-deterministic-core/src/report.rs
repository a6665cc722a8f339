//! What a front door did in this process: per device, how many times each rewrite ran, which
//! order hazards were left to the backend, and what can still make two runs differ. Both front
//! doors count into these tables and print these reports; each names itself in them.
//!
//! The counts are kept from the first op on, for the whole process (every thread); [`report`]
//! takes a snapshot, [`reset`] starts them again.

use crate::autotune::FrontDoor;
use crate::config::{self, DeterministicConfig, RewritePolicy};
use crate::{Layout, Mode};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// One thing a front door computes differently from Burn's own op.
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
    /// A `deform_conv2d` input gradient added in a fixed order.
    DeformConv2dInputGrad,
    /// A gather (`gather`, `select`, `gather_nd`) whose backward adds in the pairwise order
    /// of a [`crate::PairwisePlan`].
    PairwiseGather,
    /// A scatter-add (`scatter`, `select_assign`, `scatter_nd` with `Add`) in the pairwise
    /// order of a [`crate::PairwisePlan`].
    PairwiseScatterAdd,
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
            Self::PairwiseGather => f.write_str("pairwise gather"),
            Self::PairwiseScatterAdd => f.write_str("pairwise scatter-add"),
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

/// What a front door did on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceReport {
    /// The backend's name, as Burn reports it for the device.
    pub backend: String,
    /// The device, as its `Debug` prints it.
    pub device: String,
    /// CubeCL autotune is compiled in for this device: kernels can depend on the autotune cache
    /// (see [`crate::autotune`]).
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
    /// [`crate::config::set_config`] was called.
    pub set_config: bool,
    /// A [`crate::config::with_config`] scope ran.
    pub scoped: bool,
    /// The process configuration now (outside any scope).
    pub process: DeterministicConfig,
}

/// A snapshot of what a front door did in this process: see the [module](self).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeterminismReport {
    /// The front door that made the report (the configuration's `policy` and
    /// `fixed_order_ops` only apply to the decorator).
    pub front_door: FrontDoor,
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
        let decorator = self.front_door == FrontDoor::Decorator;
        if decorator && process.policy == RewritePolicy::Never {
            hazards.push(
                "the process configuration's policy is `never`: no resize is rewritten".into(),
            );
        }
        if decorator && !process.fixed_order_ops {
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
        writeln!(f, "{} report", self.front_door.crate_name())?;
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

/// Counts `rewrite` on a device: applied, or (`applied: false`) an op with an order hazard that
/// the configuration left to the backend. `key` tells devices apart (a backend type and the
/// device's `Debug`); `describe` gives the backend's name and whether it autotunes, called the
/// first time the device is seen. One lock per op: the ops counted are GEMM chains, tree
/// reductions and plans, many times that.
pub fn record(
    key: (&'static str, String),
    describe: impl FnOnce() -> (String, bool),
    rewrite: Rewrite,
    applied: bool,
) {
    let mut counts = COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    let index = match counts.iter().position(|(seen, _)| *seen == key) {
        Some(index) => index,
        None => {
            let (backend, autotuned) = describe();
            let entry = DeviceCounts {
                backend,
                autotuned,
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

/// What `front_door` did in this process so far: see the [module](self).
pub fn report(front_door: FrontDoor) -> DeterminismReport {
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
        front_door,
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

#[cfg(test)]
mod tests {
    use super::*;

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
            front_door: FrontDoor::Decorator,
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
        // The Burn 0.22 crate has no `fixed_order_ops` switch: no such hazard there.
        let tensor = DeterminismReport {
            front_door: FrontDoor::Tensor,
            ..report
        };
        assert_eq!(tensor.hazards().len(), 2, "{:?}", tensor.hazards());
        assert!(tensor
            .to_string()
            .starts_with("burn-deterministic-tensor report"));
    }

    #[test]
    fn counts_are_kept_per_device_and_reset() {
        let key = || ("test-backend", "device 7".to_string());
        record(
            key(),
            || ("cubecl<test>".into(), false),
            Rewrite::PairwiseGather,
            true,
        );
        record(
            key(),
            || unreachable!("described once"),
            Rewrite::PairwiseGather,
            true,
        );
        record(
            key(),
            || unreachable!("described once"),
            Rewrite::FixedOrderSum,
            false,
        );
        let report = report(FrontDoor::Tensor);
        let device = report
            .devices
            .iter()
            .find(|d| d.device == "device 7")
            .expect("the device is reported");
        assert_eq!(device.rewrites, vec![(Rewrite::PairwiseGather, 2)]);
        assert_eq!(device.left_to_backend, vec![(Rewrite::FixedOrderSum, 1)]);
        assert!(report.to_string().contains("2 × pairwise gather"));
        reset();
        assert!(super::report(FrontDoor::Tensor)
            .devices
            .iter()
            .all(|d| d.device != "device 7"));
    }
}
