//! Run-time configuration: what the decorator rewrites, and when.
//!
//! The effective configuration is, in order of precedence:
//! 1. the innermost [`with_config`] scope active on the current thread (tests, benchmarks);
//! 2. the process configuration set by [`set_config`];
//! 3. the environment variable `BURN_DETERMINISTIC_CONFIG`, read once: inline JSON (starting
//!    with `{`) or the path of a JSON file;
//! 4. [`DeterministicConfig::default`].
//!
//! ```json
//! {"policy": "auto", "modes": {"nearest": false, "bilinear": true, "bicubic": true, "lanczos3": true},
//!  "layout": "auto", "block_size": 64, "banded_min_gain": 16.0, "max_weight_bytes": 268435456,
//!  "cache_max_entries": 64, "cache_max_bytes": 268435456, "fixed_order_ops": true, "strict": false}
//! ```

use burn_deterministic_core::BandPolicy;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::RwLock;

/// Name of the environment variable read when no process configuration was set.
pub const CONFIG_ENV_VAR: &str = "BURN_DETERMINISTIC_CONFIG";

/// When the forward pass is computed with matmuls instead of `B::interpolate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RewritePolicy {
    /// Matmul forward on accelerator devices, or whenever the inner backend records gradients
    /// (`B::ad_enabled`, the `DeterministicBackend<Autodiff<_>>` layering, where autodiff can
    /// only differentiate what is built from its own ops). Native forward on CPU devices
    /// otherwise, byte-identical to `B`. The backward is always the matmul adjoint.
    #[default]
    Auto,
    /// Matmul forward and backward on every device.
    Always,
    /// No rewriting at all: exactly the inner backend, forward and backward (which panics for
    /// bilinear, bicubic and lanczos3 on most Burn 0.21 backends).
    Never,
}

/// Which interpolation modes the decorator takes over. A mode left out goes to `B` untouched,
/// forward and backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModeSet {
    /// Off by default: Burn's nearest backward already exists on every backend and is a
    /// deterministic gather, and its forward is a cheap copy.
    pub nearest: bool,
    pub bilinear: bool,
    pub bicubic: bool,
    pub lanczos3: bool,
}

impl Default for ModeSet {
    fn default() -> Self {
        Self {
            nearest: false,
            bilinear: true,
            bicubic: true,
            lanczos3: true,
        }
    }
}

impl ModeSet {
    /// All four modes.
    pub fn all() -> Self {
        Self {
            nearest: true,
            bilinear: true,
            bicubic: true,
            lanczos3: true,
        }
    }

    /// Whether `mode` is taken over.
    pub fn contains(&self, mode: &burn_backend::ops::InterpolateMode) -> bool {
        use burn_backend::ops::InterpolateMode::*;
        match mode {
            Nearest => self.nearest,
            Bilinear => self.bilinear,
            Bicubic => self.bicubic,
            Lanczos3 => self.lanczos3,
        }
    }
}

/// How each axis' weight matrix is stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightLayout {
    /// Banded when it saves at least `banded_min_gain`× the dense multiply-adds, or when the
    /// dense weights would exceed `max_weight_bytes`; dense otherwise.
    #[default]
    Auto,
    /// One `out × in` matrix per axis: two large GEMMs.
    Dense,
    /// Blocks of at most `block_size` outputs, each multiplying only the window of inputs its
    /// taps touch (windows padded to one width per axis); the adjoint uses blocks of inputs.
    /// With `block_size: 1` windows are exact: a non-finite input spreads no further than the
    /// native kernel's taps.
    Banded,
}

/// The decorator's configuration. Serializable, so it can live in a training config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeterministicConfig {
    pub policy: RewritePolicy,
    pub modes: ModeSet,
    pub layout: WeightLayout,
    /// Outputs per block of the banded layout (≥ 1). Default 64.
    pub block_size: usize,
    /// `auto` layout: banded when `dense MACs ≥ banded_min_gain × banded MACs` (> 0). Default
    /// 16 (why: [`burn_deterministic_core::BandPolicy`], the engine's defaults, shared with the
    /// Burn 0.22 front door).
    pub banded_min_gain: f64,
    /// Bytes one axis' weights may take while built and kept, in the chosen layout. A resize
    /// that cannot fit is refused with [`crate::ResizeError::WeightsTooLarge`] before any
    /// kernel runs. Default 256 MiB.
    pub max_weight_bytes: u64,
    /// Weight cache bounds: entries (0 disables the cache) and bytes. Defaults 64 and 256 MiB.
    pub cache_max_entries: usize,
    pub cache_max_bytes: u64,
    /// Replace the ops whose native kernel adds in a varying order on the device (full sums,
    /// `scatter_nd` with repeated indices; see [`crate::determinism`]) by fixed-order
    /// compositions of the inner backend's ops. Default `true`; `false` forwards them to `B`.
    pub fixed_order_ops: bool,
    /// Refuse to run where bits can still depend on something outside the computation: on a
    /// device whose kernels CubeCL's autotune picks, creating a tensor panics with the cause
    /// and the Cargo line that fixes it, instead of printing it once. Default `false`.
    pub strict: bool,
}

impl Default for DeterministicConfig {
    fn default() -> Self {
        Self {
            policy: RewritePolicy::Auto,
            modes: ModeSet::default(),
            layout: WeightLayout::Auto,
            block_size: BandPolicy::default().block_size,
            banded_min_gain: BandPolicy::default().min_gain,
            max_weight_bytes: 256 << 20,
            cache_max_entries: 64,
            cache_max_bytes: 256 << 20,
            fixed_order_ops: true,
            strict: false,
        }
    }
}

/// A configuration that could not be read.
#[derive(Debug)]
pub struct ConfigError(String);

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl DeterministicConfig {
    /// Parses a JSON configuration; unknown fields are an error, missing ones take defaults.
    pub fn from_json(json: &str) -> Result<Self, ConfigError> {
        let config: Self = serde_json::from_str(json)
            .map_err(|e| ConfigError(format!("invalid burn-deterministic config: {e}")))?;
        config
            .validate()
            .map_err(|e| ConfigError(format!("invalid burn-deterministic config: {e}")))?;
        Ok(config)
    }

    /// Checks the values serde cannot: `block_size ≥ 1`, `banded_min_gain > 0`.
    pub fn validate(&self) -> Result<(), String> {
        if self.block_size == 0 {
            return Err("block_size must be at least 1".into());
        }
        if self.banded_min_gain.is_nan() || self.banded_min_gain <= 0.0 {
            return Err(format!(
                "banded_min_gain must be positive, got {}",
                self.banded_min_gain
            ));
        }
        Ok(())
    }

    /// Reads a JSON configuration file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError(format!(
                "cannot read burn-deterministic config {}: {e}",
                path.display()
            ))
        })?;
        Self::from_json(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    /// The configuration named by `BURN_DETERMINISTIC_CONFIG` (inline JSON or a file path), or
    /// `None` when the variable is unset.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        match std::env::var(CONFIG_ENV_VAR) {
            Err(_) => Ok(None),
            Ok(value) if value.trim_start().starts_with('{') => Self::from_json(&value)
                .map(Some)
                .map_err(|e| ConfigError(format!("{CONFIG_ENV_VAR}: {e}"))),
            Ok(path) => Self::from_file(path.trim()).map(Some),
        }
    }
}

static PROCESS_CONFIG: RwLock<Option<DeterministicConfig>> = RwLock::new(None);

thread_local! {
    static SCOPED: RefCell<Vec<DeterministicConfig>> = const { RefCell::new(Vec::new()) };
}

/// Sets the configuration for the whole process (threads without a [`with_config`] scope).
pub fn set_config(config: DeterministicConfig) {
    *PROCESS_CONFIG.write().unwrap_or_else(|e| e.into_inner()) = Some(config);
}

/// The configuration in effect on this thread.
///
/// # Panics
/// When `BURN_DETERMINISTIC_CONFIG` is set but invalid: silently ignoring a configuration the
/// user asked for would change behaviour without notice.
pub fn current() -> DeterministicConfig {
    if let Some(scoped) = SCOPED.with(|s| s.borrow().last().cloned()) {
        return scoped;
    }
    if let Some(config) = PROCESS_CONFIG
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    {
        return config;
    }
    let mut process = PROCESS_CONFIG.write().unwrap_or_else(|e| e.into_inner());
    let config = match DeterministicConfig::from_env() {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => panic!("{e}"),
    };
    process.get_or_insert(config).clone()
}

/// Runs `f` with `config` in effect on the current thread, restoring the previous one after,
/// also when `f` panics. Scopes nest.
///
/// Autodiff runs the backward pass on the thread that calls `backward()`, so a scope around
/// both forward and `backward()` covers both.
///
/// The scope is this thread's only: threads started inside `f` (burn-train's per-device
/// workers, rayon tasks) see the process configuration ([`set_config`], or the
/// `BURN_DETERMINISTIC_CONFIG` environment variable), which is how a configuration reaches
/// them.
pub fn with_config<R>(config: DeterministicConfig, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            SCOPED.with(|s| s.borrow_mut().pop());
        }
    }
    SCOPED.with(|s| s.borrow_mut().push(config));
    let _pop = Pop;
    f()
}
