//! The checks of Burn 0.22's interpolate options; the error is the engine's
//! ([`burn_deterministic_core::ResizeError`]), shared with the Burn 0.21 front door.

use burn::tensor::ops::InterpolateOptions;
pub use burn_deterministic_core::{Axis, ResizeError};

/// The output `[height, width]`, by Burn 0.22's rule: `output_size`, or
/// `floor(input · scale_factor)`; exactly one must be set.
pub(crate) fn output_size(
    shape: [usize; 4],
    options: &InterpolateOptions,
) -> Result<[usize; 2], ResizeError> {
    let input = [shape[2], shape[3]];
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
    if shape.contains(&0) || output.contains(&0) {
        return Err(ResizeError::Empty {
            shape: shape.to_vec(),
            output_size: output,
        });
    }
    Ok(output)
}
