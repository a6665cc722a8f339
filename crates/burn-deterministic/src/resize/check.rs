//! What is checked before any kernel runs, so that bad input fails with a message that names
//! the problem instead of deep inside a kernel: the input and output sizes, the dtype, and each
//! axis' layout (dense or banded) with its weights within `max_weight_bytes`, by the cost model.

use super::resampling;
use crate::config::{self, DeterministicConfig};
use crate::{Axis, ResizeError};
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType, TensorMetadata};
use burn_deterministic_core::{product, reading_bytes, AxisEstimate, Layout};

/// Checks that `x` can be resized to `output_size` through the decorator under the
/// configuration in effect on this thread, returning its dims `[N, C, H, W]`: the checks the
/// decorator's `interpolate` runs before any kernel, as a value instead of a panic. This
/// includes weights that would not fit in `max_weight_bytes` in any layout.
///
/// ```rust
/// # #[cfg(feature = "ndarray")] {
/// use burn::backend::NdArray;
/// use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
/// use burn::tensor::Tensor;
/// use burn_deterministic::resize::check_resize;
/// use burn_deterministic::{DeterministicBackend, ResizeError};
///
/// let device = Default::default();
/// let x = Tensor::<DeterministicBackend<NdArray>, 4>::zeros([1, 3, 8, 8], &device);
/// let options = InterpolateOptions::new(InterpolateMode::Bilinear);
/// assert_eq!(check_resize(&x, [16, 16], &options), Ok([1, 3, 8, 8]));
/// assert_eq!(
///     check_resize(&x, [0, 16], &options),
///     Err(ResizeError::Empty { shape: vec![1, 3, 8, 8], output_size: [0, 16] })
/// );
/// # }
/// ```
pub fn check_resize<B: Backend>(
    x: &burn::tensor::Tensor<B, 4>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
) -> Result<[usize; 4], ResizeError> {
    let primitive = x.clone().into_primitive().tensor();
    check::<B>(&primitive, output_size, options, &config::current()).map(|c| c.dims)
}

/// What [`check_resize`] established: the dims and each axis' layout.
pub(super) struct Checked {
    pub dims: [usize; 4],
    pub layouts: [Layout; 2],
}

pub(super) fn checked<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Checked {
    check::<B>(x, output_size, options, config).unwrap_or_else(|e| panic!("{e}"))
}

fn check<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
    options: &InterpolateOptions,
    config: &DeterministicConfig,
) -> Result<Checked, ResizeError> {
    let dims = check_input::<B>(x, output_size)?;
    let dtype = x.dtype();
    let device = B::float_device(x);
    if !super::weights::HOST_REFERENCE && !super::weights::has_forward_kernel::<B>(&device, options)
    {
        return Err(ResizeError::NoKernel {
            mode: resampling(options).mode,
            dtype: format!("{dtype:?}"),
            backend: B::name(&device),
            detail: "no host reference kernel is compiled in: enable burn-deterministic's \
                     `flex` (or `ndarray`) feature",
        });
    }
    let height = choose_layout(
        Axis::Height,
        dims[2],
        output_size[0],
        options,
        dtype,
        config,
    )?;
    let width = choose_layout(Axis::Width, dims[3], output_size[1], options, dtype, config)?;
    Ok(Checked {
        dims,
        layouts: [height, width],
    })
}

/// The input and output sizes alone: what every path needs, the native one included (`B`'s
/// kernels fail on these too, deep inside, with messages that do not name the problem).
pub(super) fn check_input<B: Backend>(
    x: &FloatTensor<B>,
    output_size: [usize; 2],
) -> Result<[usize; 4], ResizeError> {
    let shape = x.shape().to_vec();
    let dims: [usize; 4] =
        shape
            .clone()
            .try_into()
            .map_err(|_| ResizeError::NotFourDimensional {
                shape: shape.clone(),
            })?;
    if dims.contains(&0) || output_size.contains(&0) {
        return Err(ResizeError::Empty { shape, output_size });
    }
    let dtype = x.dtype();
    let device = B::float_device(x);
    if !accepts_dtype(dtype, B::supports_dtype(&device, dtype)) {
        return Err(ResizeError::UnsupportedDtype {
            dtype: format!("{dtype:?}"),
            backend: B::name(&device),
        });
    }
    // Rust allocations are limited to `isize::MAX` bytes; so is every backend's output buffer.
    let output_bytes = product(&[
        dims[0],
        dims[1],
        output_size[0],
        output_size[1],
        dtype.size(),
    ]);
    if output_bytes > isize::MAX as u64 {
        return Err(ResizeError::OutputTooLarge { shape, output_size });
    }
    Ok(dims)
}

/// Dense or banded for one axis. `auto` takes banded when it saves at least
/// `banded_min_gain`× the dense multiply-adds, or when the dense weights exceed
/// `max_weight_bytes`; either layout must fit in `max_weight_bytes`.
fn choose_layout(
    axis: Axis,
    input: usize,
    output: usize,
    options: &InterpolateOptions,
    dtype: DType,
    config: &DeterministicConfig,
) -> Result<Layout, ResizeError> {
    // Every layout holds at least one weight per output and one per input (and reading them
    // off the kernel, a response of that size): refuse what cannot fit before estimating,
    // which allocates per output.
    let floor = reading_bytes(1, input, output, dtype.size());
    if floor > config.max_weight_bytes {
        return Err(ResizeError::WeightsTooLarge {
            axis,
            input,
            output,
            layout: None,
            bytes: floor,
            limit: config.max_weight_bytes,
        });
    }
    let estimate =
        AxisEstimate::new(input, output, resampling(options)).ok_or(ResizeError::HostMemory {
            axis,
            input,
            output,
        })?;
    let choice = config.choose_layout(&estimate, dtype.size(), config.band_policy());
    if estimate.peak_bytes(choice, dtype.size()) <= config.max_weight_bytes {
        return Ok(choice);
    }
    let bytes = estimate.peak_bytes(choice, dtype.size());
    Err(ResizeError::WeightsTooLarge {
        axis,
        input,
        output,
        layout: Some(choice),
        bytes,
        limit: config.max_weight_bytes,
    })
}

/// Whether `dtype` qualifies for the rewrite: the weights are built in it and multiplied by
/// `B`'s matmul, so only float dtypes `B` supports do. (The backends available today refuse to
/// create the others; the check keeps an exotic inner backend from failing inside a kernel.)
fn accepts_dtype(dtype: DType, supported_by_backend: bool) -> bool {
    dtype.is_float() && supported_by_backend
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_supported_float_dtypes_are_accepted() {
        assert!(accepts_dtype(DType::F32, true));
        assert!(accepts_dtype(DType::F16, true));
        assert!(!accepts_dtype(DType::BF16, false));
        assert!(!accepts_dtype(DType::I32, true));
        let message = ResizeError::UnsupportedDtype {
            dtype: format!("{:?}", DType::BF16),
            backend: "wgpu<wgsl>".into(),
        }
        .to_string();
        assert_eq!(
            message,
            "burn-deterministic interpolate: dtype BF16 is not a float dtype that backend \
             wgpu<wgsl> supports"
        );
    }
}
