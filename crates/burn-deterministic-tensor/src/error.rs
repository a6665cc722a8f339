//! What a resize refuses, before any kernel runs.

use burn::tensor::ops::InterpolateOptions;
use burn::tensor::DType;
use burn_deterministic_core::Mode;
use core::fmt;

/// Why a resize cannot run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResizeError {
    /// Neither `output_size` nor `scale_factor` is set.
    NoOutputSize,
    /// Both `output_size` and `scale_factor` are set.
    BothOutputSizeAndScaleFactor,
    /// A scale factor that is not a finite positive number.
    InvalidScaleFactor([f32; 2]),
    /// An input or output axis of size zero (`input` and `output` are `[height, width]`).
    EmptyAxis {
        /// The input's `[height, width]`.
        input: [usize; 2],
        /// The output's `[height, width]`.
        output: [usize; 2],
    },
    /// One axis' weight matrix would not fit: `rows × columns` entries.
    TooLarge {
        /// Output size along the axis.
        rows: usize,
        /// Input size along the axis.
        columns: usize,
    },
    /// The device's backend has no forward kernel for this mode and dtype (Burn's own
    /// `interpolate` panics there too; e.g. flex has no nearest-exact in 0.22.1), so there are
    /// no weights to read. Declared per backend, never probed.
    NoBackendKernel {
        /// The interpolation mode.
        mode: Mode,
        /// The tensor's dtype.
        dtype: DType,
        /// Which kernels the backend has.
        reason: &'static str,
    },
    /// Mechanism (b), `extension`, is implemented for flex and the CubeCL backends (this crate's
    /// features `extension-flex`, `extension-wgpu`) only; `device` is the tensor's.
    NotRouted {
        /// The tensor's device, as Burn prints it.
        device: String,
    },
}

impl fmt::Display for ResizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "burn-deterministic-tensor interpolate: ")?;
        match self {
            Self::NoOutputSize => write!(f, "set one of `output_size` or `scale_factor`"),
            Self::BothOutputSizeAndScaleFactor => {
                write!(
                    f,
                    "set only one of `output_size` or `scale_factor`, not both"
                )
            }
            Self::InvalidScaleFactor(scale) => {
                write!(f, "scale factor {scale:?} must be finite and positive")
            }
            Self::EmptyAxis { input, output } => write!(
                f,
                "cannot resize [height, width] {input:?} to {output:?}: every axis needs at \
                 least one element"
            ),
            Self::TooLarge { rows, columns } => write!(
                f,
                "a {rows} × {columns} weight matrix does not fit in memory (one axis' resize)"
            ),
            Self::NoBackendKernel {
                mode,
                dtype,
                reason,
            } => write!(
                f,
                "the device's backend has no {mode:?} interpolate kernel for {dtype:?} to read \
                 the weights from ({reason})"
            ),
            Self::NotRouted { device } => write!(
                f,
                "the backend extension has no implementation for {device}: enable this crate's \
                 `extension-flex` or `extension-wgpu` feature, or use `burn_deterministic_tensor::interpolate`"
            ),
        }
    }
}

impl std::error::Error for ResizeError {}

/// The output `[height, width]`, by Burn 0.22's rule: `output_size`, or
/// `floor(input · scale_factor)`; exactly one must be set.
pub(crate) fn output_size(
    input: [usize; 2],
    options: &InterpolateOptions,
) -> Result<[usize; 2], ResizeError> {
    let output = match (options.output_size, options.scale_factor) {
        (Some(size), None) => size,
        (None, Some(scale)) => {
            if !scale.iter().all(|s| s.is_finite() && *s > 0.0) {
                return Err(ResizeError::InvalidScaleFactor(scale));
            }
            // Burn's arithmetic: f64 product, truncated.
            [0, 1].map(|axis| (input[axis] as f64 * scale[axis] as f64) as usize)
        }
        (Some(_), Some(_)) => return Err(ResizeError::BothOutputSizeAndScaleFactor),
        (None, None) => return Err(ResizeError::NoOutputSize),
    };
    if input.contains(&0) || output.contains(&0) {
        return Err(ResizeError::EmptyAxis { input, output });
    }
    Ok(output)
}
