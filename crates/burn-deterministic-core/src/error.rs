//! What a resize refuses, before any kernel runs: one error for both front doors.
//!
//! Burn-specific values are held by name: a dtype as Burn's `Debug` prints it (`"F32"`), a
//! backend as `Backend::name` reports it, a device as its `Debug` prints it. This crate does
//! not depend on Burn, and the two front doors use two Burn versions whose types differ.

use crate::autotune::AutotuneHazard;
use crate::{Layout, Mode};
use core::fmt;

/// One axis of a 2-D resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The height axis (dimension 2 of `[N, C, H, W]`).
    Height,
    /// The width axis (dimension 3).
    Width,
}

impl Axis {
    /// Both axes, height first.
    pub const BOTH: [Axis; 2] = [Axis::Height, Axis::Width];
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Height => "height",
            Self::Width => "width",
        })
    }
}

/// Why a resize cannot be served. Returned by the front doors' checking functions before any
/// kernel runs; where Burn's API cannot return an error (a backend op, Burn's own
/// `interpolate` signature) its message is the panic's.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResizeError {
    /// `interpolate` works on `[batch, channels, height, width]`.
    NotFourDimensional {
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// A dimension of the input, or a requested output size, is zero.
    Empty {
        /// The input's shape.
        shape: Vec<usize>,
        /// The requested output `[height, width]`.
        output_size: [usize; 2],
    },
    /// Neither an output size nor a scale factor is given (Burn 0.22's options).
    NoOutputSize,
    /// Both an output size and a scale factor are given (Burn 0.22's options).
    BothOutputSizeAndScaleFactor,
    /// A scale factor that is not a finite positive number (Burn 0.22's options).
    InvalidScaleFactor([f32; 2]),
    /// The upstream gradient does not have the forward output's shape.
    GradientShape {
        /// The forward output's shape.
        expected: Vec<usize>,
        /// The gradient's shape.
        found: Vec<usize>,
    },
    /// The tensor's dtype is not a float dtype the backend supports.
    UnsupportedDtype {
        /// The dtype, as Burn prints it.
        dtype: String,
        /// The backend, as Burn names it.
        backend: String,
    },
    /// The backend has no forward kernel for the mode and dtype to read the weights off
    /// (declared per backend, never probed).
    NoKernel {
        /// The interpolation mode.
        mode: Mode,
        /// The dtype, as Burn prints it.
        dtype: String,
        /// The backend, as Burn names it.
        backend: String,
        /// Which kernels the backend has, or what to enable.
        detail: &'static str,
    },
    /// One axis' weights would exceed the limit on a map's bytes.
    WeightsTooLarge {
        /// The axis.
        axis: Axis,
        /// Input size along the axis.
        input: usize,
        /// Output size along the axis.
        output: usize,
        /// The layout that was measured; `None` when no layout can fit.
        layout: Option<Layout>,
        /// Bytes the weights would need (`u64::MAX`: more than a `u64` counts).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The output would have more bytes than this platform can address.
    OutputTooLarge {
        /// The input's shape.
        shape: Vec<usize>,
        /// The requested `[height, width]`.
        output_size: [usize; 2],
    },
    /// The host could not hold the per-output tap windows of one axis.
    HostMemory {
        /// The axis.
        axis: Axis,
        /// Input size along the axis.
        input: usize,
        /// Output size along the axis.
        output: usize,
    },
    /// A front door's backend-specific mechanism has no implementation for this device.
    NotRouted {
        /// The tensor's device, as Burn prints it.
        device: String,
        /// What to enable or call instead.
        remedy: &'static str,
    },
    /// The configuration is `strict` and the device autotunes: bits could depend on CubeCL's
    /// autotune cache.
    Autotuned(AutotuneHazard),
}

impl fmt::Display for ResizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "burn-deterministic interpolate: ")?;
        match self {
            Self::NotFourDimensional { shape } => write!(
                f,
                "input must be 4-D [batch, channels, height, width], got shape {shape:?}"
            ),
            Self::Empty { shape, output_size } => write!(
                f,
                "cannot resize shape {shape:?} to [height, width] {output_size:?}: every \
                 dimension needs at least one element"
            ),
            Self::NoOutputSize => write!(f, "set one of `output_size` or `scale_factor`"),
            Self::BothOutputSizeAndScaleFactor => write!(
                f,
                "set only one of `output_size` or `scale_factor`, not both"
            ),
            Self::InvalidScaleFactor(scale) => {
                write!(f, "scale factor {scale:?} must be finite and positive")
            }
            Self::GradientShape { expected, found } => write!(
                f,
                "upstream gradient has shape {found:?}, expected the output shape {expected:?}"
            ),
            Self::UnsupportedDtype { dtype, backend } => write!(
                f,
                "dtype {dtype} is not a float dtype that backend {backend} supports"
            ),
            Self::NoKernel {
                mode,
                dtype,
                backend,
                detail,
            } => write!(
                f,
                "backend {backend} has no {mode:?} interpolate kernel for {dtype} to read the \
                 weights off ({detail})"
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
                let bytes = if *bytes == u64::MAX {
                    "more than 2^64".to_string()
                } else {
                    bytes.to_string()
                };
                write!(
                    f,
                    "the {axis} weights for {input} -> {output} ({layout}) need {bytes} bytes, \
                     over the limit of {limit} bytes"
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
            Self::NotRouted { device, remedy } => {
                write!(f, "no implementation for device {device}: {remedy}")
            }
            Self::Autotuned(hazard) => write!(f, "refused under `strict`: {hazard}"),
        }
    }
}

impl std::error::Error for ResizeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let too_large = ResizeError::WeightsTooLarge {
            axis: Axis::Width,
            input: 4,
            output: 1 << 40,
            layout: Some(Layout::Dense),
            bytes: u64::MAX,
            limit: 1 << 28,
        };
        let text = too_large.to_string();
        assert!(text.starts_with("burn-deterministic interpolate: the width weights"));
        assert!(text.contains("more than 2^64 bytes"), "{text}");
        let empty = ResizeError::Empty {
            shape: vec![1, 0, 4, 4],
            output_size: [8, 8],
        };
        assert!(empty.to_string().contains("[1, 0, 4, 4]"));
        assert_eq!(Axis::BOTH.map(|a| a.to_string()), ["height", "width"]);
    }
}
