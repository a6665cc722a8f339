use burn_backend::DType;
use burn_deterministic_core::{Layout, Mode};
use core::fmt;

/// One axis of a 2-D resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// The height axis (dimension 2 of `[N, C, H, W]`).
    Height,
    /// The width axis (dimension 3).
    Width,
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Height => "height",
            Self::Width => "width",
        })
    }
}

/// Why a resize cannot be served. Burn's backend ops cannot return errors, so the decorator
/// panics with this message at its entry, before any kernel runs;
/// [`crate::resize::check_resize`] returns it as a value for callers that want to check first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResizeError {
    /// `interpolate` works on `[batch, channels, height, width]`.
    NotFourDimensional {
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// An input dimension is zero.
    EmptyInput {
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// A requested output size is zero.
    EmptyOutput {
        /// The requested `[height, width]`.
        output_size: [usize; 2],
    },
    /// The upstream gradient does not have the forward output's shape.
    GradientShape {
        /// The forward output's shape.
        expected: Vec<usize>,
        /// The gradient's shape.
        found: Vec<usize>,
    },
    /// The tensor's dtype is not a float dtype the inner backend supports.
    UnsupportedDtype {
        /// The tensor's dtype.
        dtype: DType,
        /// The inner backend's name, as Burn reports it.
        backend: String,
    },
    /// The inner backend has no forward kernel for the mode, and no host reference kernel is
    /// compiled in to read the weights off (enable this crate's `flex` or `ndarray` feature).
    NoKernel {
        /// The interpolation mode.
        mode: Mode,
        /// The inner backend's name, as Burn reports it.
        backend: String,
    },
    /// One axis' weights would exceed `DeterministicConfig::max_weight_bytes`.
    WeightsTooLarge {
        /// The axis.
        axis: Axis,
        /// Input size along the axis.
        input: usize,
        /// Output size along the axis.
        output: usize,
        /// The layout that was measured; `None` when no layout can fit.
        layout: Option<Layout>,
        /// Bytes the weights would need.
        bytes: u64,
        /// The configured limit.
        limit: u64,
    },
    /// The output would have more bytes than this platform can address.
    OutputTooLarge {
        /// The input's shape.
        shape: Vec<usize>,
        /// The requested `[height, width]`.
        output_size: [usize; 2],
    },
    /// The host could not hold the per-output tap windows of one axis (only reachable with
    /// `max_weight_bytes` raised far above the default).
    HostMemory {
        /// The axis.
        axis: Axis,
        /// Input size along the axis.
        input: usize,
        /// Output size along the axis.
        output: usize,
    },
}

impl fmt::Display for ResizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "burn-deterministic interpolate: ")?;
        match self {
            Self::NotFourDimensional { shape } => write!(
                f,
                "input must be 4-D [batch, channels, height, width], got shape {shape:?}"
            ),
            Self::EmptyInput { shape } => {
                write!(f, "input has a zero-sized dimension: shape {shape:?}")
            }
            Self::EmptyOutput { output_size } => write!(
                f,
                "output size must be non-zero in both axes, got {output_size:?}"
            ),
            Self::GradientShape { expected, found } => write!(
                f,
                "upstream gradient has shape {found:?}, expected the output shape {expected:?}"
            ),
            Self::UnsupportedDtype { dtype, backend } => write!(
                f,
                "dtype {dtype:?} is not a float dtype that backend {backend} supports"
            ),
            Self::NoKernel { mode, backend } => write!(
                f,
                "backend {backend} has no {mode:?} interpolate kernel to read weights off, and \
                 no host reference kernel is compiled in: enable burn-deterministic's `flex` \
                 (or `ndarray`) feature"
            ),
            Self::WeightsTooLarge {
                axis,
                input,
                output,
                layout,
                bytes,
                limit,
            } => {
                let layout = match layout {
                    None => "any layout".to_string(),
                    Some(Layout::Dense) => "dense".to_string(),
                    Some(Layout::Banded { block_size }) => {
                        format!("banded, blocks of {block_size}")
                    }
                };
                write!(
                    f,
                    "the {axis} weights for {input} -> {output} ({layout}) need {bytes} bytes, \
                     over the limit of {limit} bytes (DeterministicConfig::max_weight_bytes)"
                )
            }
            Self::OutputTooLarge { shape, output_size } => write!(
                f,
                "resizing {shape:?} to {output_size:?} gives an output larger than this platform \
                 can address"
            ),
            Self::HostMemory {
                axis,
                input,
                output,
            } => write!(
                f,
                "the {axis} axis {input} -> {output} needs more host memory for its tap windows \
                 than can be reserved"
            ),
        }
    }
}

impl std::error::Error for ResizeError {}
