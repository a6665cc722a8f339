use burn_backend::DType;
use core::fmt;

/// Why a resize cannot be served. The backend ops cannot return errors, so the decorator panics
/// with this message at its entry, before any kernel runs; [`crate::resize::check_resize`] returns
/// it as a value for callers that want to check first.
#[derive(Debug, Clone, PartialEq)]
pub enum ResizeError {
    /// `interpolate` works on `[batch, channels, height, width]`.
    NotFourDimensional { shape: Vec<usize> },
    /// An input dimension is zero.
    EmptyInput { shape: Vec<usize> },
    /// A requested output size is zero.
    EmptyOutput { output_size: [usize; 2] },
    /// The upstream gradient does not have the forward output's shape.
    GradientShape {
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// The tensor's dtype is not a float dtype the inner backend supports.
    UnsupportedDtype { dtype: DType, backend: String },
    /// One axis' weights would exceed `DeterministicConfig::max_weight_bytes`.
    WeightsTooLarge {
        axis: &'static str,
        input: usize,
        output: usize,
        layout: String,
        bytes: u64,
        limit: u64,
    },
    /// The output would have more bytes than this platform can address.
    OutputTooLarge {
        shape: Vec<usize>,
        output_size: [usize; 2],
    },
    /// The host could not hold the per-output tap windows of one axis (only reachable with
    /// `max_weight_bytes` raised far above the default).
    HostMemory {
        axis: &'static str,
        input: usize,
        output: usize,
    },
    /// The configuration holds a value out of range.
    InvalidConfig(String),
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
            Self::WeightsTooLarge {
                axis,
                input,
                output,
                layout,
                bytes,
                limit,
            } => write!(
                f,
                "the {axis} weights for {input} -> {output} ({layout}) need {bytes} bytes, over \
                 the limit of {limit} bytes (DeterministicConfig::max_weight_bytes)"
            ),
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
            Self::InvalidConfig(reason) => write!(f, "invalid configuration: {reason}"),
        }
    }
}

impl std::error::Error for ResizeError {}
