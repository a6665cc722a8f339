//! Run-time configuration, one for both front doors: what is rewritten, and when.
//!
//! The Burn 0.21 decorator (`burn-deterministic`) reads every field. The Burn 0.22 functions
//! (`burn-deterministic-tensor`) are called explicitly, so `policy`, `modes` and
//! `fixed_order_ops`, which decide what the decorator takes over, do not apply there; the
//! layout of the backward's maps, the weight and cache limits and `strict` do.
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

use crate::{AxisEstimate, BandPolicy, Layout, Mode};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// Name of the environment variable read when no process configuration was set.
pub const CONFIG_ENV_VAR: &str = "BURN_DETERMINISTIC_CONFIG";

/// When the forward pass is computed with matmuls instead of `B::interpolate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
    /// Nearest. Off by default: where the backend has a nearest backward it is a deterministic
    /// gather, and its forward a cheap copy. Where it has none (Candle), the decorator takes
    /// nearest over anyway (its device profile declares the backend's kernels).
    pub nearest: bool,
    /// Bilinear (on by default).
    pub bilinear: bool,
    /// Bicubic (on by default).
    pub bicubic: bool,
    /// Lanczos3 (on by default).
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

    /// Whether `mode` is taken over (nearest-exact, a Burn 0.22 mode, with nearest).
    pub fn contains(&self, mode: Mode) -> bool {
        match mode {
            Mode::Nearest | Mode::NearestExact => self.nearest,
            Mode::Bilinear => self.bilinear,
            Mode::Bicubic => self.bicubic,
            Mode::Lanczos3 => self.lanczos3,
        }
    }
}

/// How each axis' weight matrix is stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
///
/// Built from [`Default`] with the `with_*` methods, or read with [`Self::from_json`] /
/// [`Self::from_file`]; fields may be added in later versions (`#[non_exhaustive]`). Its values
/// are checked where it takes effect: [`set_config`] and [`with_config`] refuse an invalid one.
///
/// ```rust
/// use burn_deterministic_core::config::{DeterministicConfig, RewritePolicy, WeightLayout};
///
/// let config = DeterministicConfig::default()
///     .with_policy(RewritePolicy::Always)
///     .with_layout(WeightLayout::Banded)
///     .with_block_size(1);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DeterministicConfig {
    /// When the forward is computed with matmuls. Default [`RewritePolicy::Auto`].
    pub policy: RewritePolicy,
    /// Which modes the decorator takes over. Default: bilinear, bicubic, lanczos3.
    pub modes: ModeSet,
    /// How each axis' weights are laid out. Default [`WeightLayout::Auto`].
    pub layout: WeightLayout,
    /// Outputs per block of the banded layout (≥ 1). Default 64.
    pub block_size: usize,
    /// `auto` layout: banded when `dense MACs ≥ banded_min_gain × banded MACs` (> 0). Default
    /// 16 (why: [`BandPolicy`]). The Burn 0.22 extension, whose maps serve the backward only,
    /// bands from [`BandPolicy::adjoint`]'s measured 8 instead.
    pub banded_min_gain: f64,
    /// Bytes one axis' weights may take while built and kept, in the chosen layout. A resize
    /// that cannot fit is refused with [`crate::ResizeError::WeightsTooLarge`] before any
    /// kernel runs. Default 256 MiB.
    pub max_weight_bytes: u64,
    /// Weight cache bound in entries (0 disables the cache). Default 64.
    pub cache_max_entries: usize,
    /// Weight cache bound in bytes. Default 256 MiB.
    pub cache_max_bytes: u64,
    /// Replace the ops whose native kernel adds in a varying order on the device (full sums,
    /// `scatter_nd` with repeated indices; the Burn 0.21 decorator's `determinism`) by fixed-order
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
            max_weight_bytes: crate::DEFAULT_MAX_WEIGHT_BYTES,
            cache_max_entries: crate::DEFAULT_CACHE_MAX_ENTRIES,
            cache_max_bytes: crate::DEFAULT_CACHE_MAX_BYTES,
            fixed_order_ops: true,
            strict: false,
        }
    }
}

/// Why a configuration was refused. Each names what was wrong: the field, the file, or the
/// environment variable.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A field holds a value out of its range.
    InvalidField {
        /// The field's name, as in JSON.
        field: &'static str,
        /// The value found, as written.
        value: String,
        /// What the field accepts.
        expected: &'static str,
    },
    /// The JSON text is not a configuration: a syntax error, an unknown field, or a value of the
    /// wrong type (serde's message names the field and where).
    Json {
        /// serde's message.
        message: String,
    },
    /// A configuration file could not be read.
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error's message.
        message: String,
    },
    /// A configuration file holds an invalid configuration.
    InFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong in it.
        error: Box<ConfigError>,
    },
    /// The environment variable [`CONFIG_ENV_VAR`] holds an invalid configuration.
    InEnvironment {
        /// The variable's name.
        variable: &'static str,
        /// What is wrong in it.
        error: Box<ConfigError>,
    },
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::InvalidField {
                field,
                value,
                expected,
            } => write!(
                f,
                "invalid burn-deterministic config: `{field}` is {value}, expected {expected}"
            ),
            Self::Json { message } => write!(f, "invalid burn-deterministic config: {message}"),
            Self::Read { path, message } => write!(
                f,
                "cannot read burn-deterministic config {}: {message}",
                path.display()
            ),
            Self::InFile { path, error } => write!(f, "{}: {error}", path.display()),
            Self::InEnvironment { variable, error } => write!(f, "{variable}: {error}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl DeterministicConfig {
    /// Parses a JSON configuration; unknown fields are an error, missing ones take defaults.
    ///
    /// ```rust
    /// use burn_deterministic_core::config::{ConfigError, DeterministicConfig};
    ///
    /// let config = DeterministicConfig::from_json(r#"{"layout": "banded"}"#).unwrap();
    /// assert_eq!(config.block_size, DeterministicConfig::default().block_size);
    /// assert!(matches!(
    ///     DeterministicConfig::from_json(r#"{"block_size": 0}"#),
    ///     Err(ConfigError::InvalidField { field: "block_size", .. })
    /// ));
    /// ```
    pub fn from_json(json: &str) -> Result<Self, ConfigError> {
        let config: Self = serde_json::from_str(json).map_err(|e| ConfigError::Json {
            message: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the values serde cannot: `block_size ≥ 1`, `banded_min_gain > 0`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.block_size == 0 {
            return Err(ConfigError::InvalidField {
                field: "block_size",
                value: self.block_size.to_string(),
                expected: "at least 1",
            });
        }
        if self.banded_min_gain.is_nan() || self.banded_min_gain <= 0.0 {
            return Err(ConfigError::InvalidField {
                field: "banded_min_gain",
                value: self.banded_min_gain.to_string(),
                expected: "a positive number",
            });
        }
        Ok(())
    }

    /// Reads a JSON configuration file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::from_json(&text).map_err(|error| ConfigError::InFile {
            path: path.to_path_buf(),
            error: Box::new(error),
        })
    }

    /// The configuration named by `BURN_DETERMINISTIC_CONFIG` (inline JSON or a file path), or
    /// `None` when the variable is unset.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        let in_environment = |error| ConfigError::InEnvironment {
            variable: CONFIG_ENV_VAR,
            error: Box::new(error),
        };
        match std::env::var(CONFIG_ENV_VAR) {
            Err(_) => Ok(None),
            Ok(value) if value.trim_start().starts_with('{') => {
                Self::from_json(&value).map(Some).map_err(in_environment)
            }
            Ok(path) => Self::from_file(path.trim())
                .map(Some)
                .map_err(in_environment),
        }
    }

    /// This configuration with `policy`.
    pub fn with_policy(self, policy: RewritePolicy) -> Self {
        Self { policy, ..self }
    }

    /// This configuration with `modes`.
    pub fn with_modes(self, modes: ModeSet) -> Self {
        Self { modes, ..self }
    }

    /// This configuration with `layout`.
    pub fn with_layout(self, layout: WeightLayout) -> Self {
        Self { layout, ..self }
    }

    /// This configuration with `block_size` (checked where it is used: [`set_config`],
    /// [`with_config`]).
    pub fn with_block_size(self, block_size: usize) -> Self {
        Self { block_size, ..self }
    }

    /// This configuration with `banded_min_gain` (checked where it is used).
    pub fn with_banded_min_gain(self, banded_min_gain: f64) -> Self {
        Self {
            banded_min_gain,
            ..self
        }
    }

    /// This configuration with `cache_max_entries`.
    pub fn with_cache_max_entries(self, cache_max_entries: usize) -> Self {
        Self {
            cache_max_entries,
            ..self
        }
    }

    /// This configuration with `cache_max_bytes`.
    pub fn with_cache_max_bytes(self, cache_max_bytes: u64) -> Self {
        Self {
            cache_max_bytes,
            ..self
        }
    }

    /// This configuration with `max_weight_bytes`.
    pub fn with_max_weight_bytes(self, max_weight_bytes: u64) -> Self {
        Self {
            max_weight_bytes,
            ..self
        }
    }

    /// This configuration with `fixed_order_ops`.
    pub fn with_fixed_order_ops(self, fixed_order_ops: bool) -> Self {
        Self {
            fixed_order_ops,
            ..self
        }
    }

    /// This configuration with `strict`.
    pub fn with_strict(self, strict: bool) -> Self {
        Self { strict, ..self }
    }
}

impl RewritePolicy {
    /// Whether the forward is computed with matmuls, on a device that is an accelerator or
    /// not, by a backend that records gradients (autodiff inside the decorator) or not.
    ///
    /// `Auto` keeps the native forward on CPU devices, except where the backend records
    /// gradients: the decorator cannot hand autodiff a backward, so there the forward must be
    /// built from ops autodiff can differentiate.
    pub fn rewrites_forward(self, accelerator: bool, records_gradients: bool) -> bool {
        match self {
            Self::Never => false,
            Self::Always => true,
            Self::Auto => accelerator || records_gradients,
        }
    }
}

impl DeterministicConfig {
    /// The `auto` layout's policy: blocks of `block_size`, banded from `banded_min_gain`.
    pub fn band_policy(&self) -> BandPolicy {
        BandPolicy {
            block_size: self.block_size,
            min_gain: self.banded_min_gain,
        }
    }

    /// The layout of one axis' map whose cost is `estimate` (elements of `dtype_size` bytes):
    /// `layout` dense or banded as set, or under `auto` banded where `auto_policy` says the band
    /// saves enough or the dense map would not fit in `max_weight_bytes`. The caller checks that
    /// the choice fits.
    pub fn choose_layout(
        &self,
        estimate: &AxisEstimate,
        dtype_size: usize,
        auto_policy: BandPolicy,
    ) -> Layout {
        let banded = Layout::Banded {
            block_size: self.block_size,
        };
        match self.layout {
            WeightLayout::Dense => Layout::Dense,
            WeightLayout::Banded => banded,
            WeightLayout::Auto => {
                let dense_fits =
                    estimate.peak_bytes(Layout::Dense, dtype_size) <= self.max_weight_bytes;
                if auto_policy.saves(estimate, dtype_size) || !dense_fits {
                    auto_policy.banded()
                } else {
                    Layout::Dense
                }
            }
        }
    }
}

static PROCESS_CONFIG: RwLock<Option<DeterministicConfig>> = RwLock::new(None);
static SET_CONFIG_CALLED: AtomicBool = AtomicBool::new(false);
static SCOPE_USED: AtomicBool = AtomicBool::new(false);

/// Where this process's configuration came from so far (for a determinism report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigSources {
    /// [`set_config`] was called.
    pub set_config: bool,
    /// A [`with_config`] scope ran.
    pub scoped: bool,
    /// [`CONFIG_ENV_VAR`] is set.
    pub environment: bool,
}

/// Where this process's configuration came from so far.
pub fn sources() -> ConfigSources {
    ConfigSources {
        set_config: SET_CONFIG_CALLED.load(Ordering::Relaxed),
        scoped: SCOPE_USED.load(Ordering::Relaxed),
        environment: std::env::var_os(CONFIG_ENV_VAR).is_some(),
    }
}

thread_local! {
    static SCOPED: RefCell<Vec<DeterministicConfig>> = const { RefCell::new(Vec::new()) };
}

/// Sets the configuration for the whole process (threads without a [`with_config`] scope),
/// after validating it.
pub fn set_config(config: DeterministicConfig) -> Result<(), ConfigError> {
    config.validate()?;
    *PROCESS_CONFIG.write().unwrap_or_else(|e| e.into_inner()) = Some(config);
    SET_CONFIG_CALLED.store(true, Ordering::Relaxed);
    Ok(())
}

/// The error of an invalid `BURN_DETERMINISTIC_CONFIG`, if the variable is set and invalid.
///
/// Such a variable is reported once on stderr, when the configuration is first needed, and the
/// decorator then runs with [`DeterministicConfig::default`] (its deterministic settings) rather
/// than panicking inside whichever op asked first. A program that would rather stop calls this
/// at start-up.
pub fn environment_error() -> Option<ConfigError> {
    DeterministicConfig::from_env().err()
}

/// The configuration in effect on this thread: the innermost [`with_config`] scope, else the
/// process configuration ([`set_config`]), else the environment variable, else the default.
pub fn current() -> DeterministicConfig {
    if let Some(scoped) = SCOPED.with(|s| s.borrow().last().cloned()) {
        return scoped;
    }
    process()
}

/// The process configuration: [`set_config`]'s, else the environment variable's, else the
/// default (read, and an invalid variable reported, once).
pub fn process() -> DeterministicConfig {
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
        Err(error) => {
            eprintln!(
                "burn-deterministic: {error}; running with the default configuration \
                 (config::environment_error() returns this error)"
            );
            DeterministicConfig::default()
        }
    };
    process.get_or_insert(config).clone()
}

/// Runs `f` with `config` in effect on the current thread, restoring the previous one after.
/// Scopes nest. An invalid `config` is refused before `f` runs.
///
/// Autodiff runs the backward pass on the thread that calls `backward()`, so a scope around
/// both forward and `backward()` covers both.
///
/// The scope is this thread's only: threads started inside `f` (burn-train's per-device
/// workers, rayon tasks) see the process configuration ([`set_config`], or the
/// `BURN_DETERMINISTIC_CONFIG` environment variable), which is how a configuration reaches
/// them.
pub fn with_config<R>(
    config: DeterministicConfig,
    f: impl FnOnce() -> R,
) -> Result<R, ConfigError> {
    config.validate()?;
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            SCOPED.with(|s| s.borrow_mut().pop());
        }
    }
    SCOPED.with(|s| s.borrow_mut().push(config));
    SCOPE_USED.store(true, Ordering::Relaxed);
    let _pop = Pop;
    Ok(f())
}
