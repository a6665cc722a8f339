//! What this crate computed in this process: per device, how many times each function replaced
//! Burn's op (resize forward and backward by mode and layouts, the fixed-order reductions, the
//! pairwise gathers and scatter-adds, the deformable convolution's input gradient), whether the
//! device autotunes, and where the configuration came from. The same tables and report as the
//! Burn 0.21 crate's (the shared core), naming this crate.
//!
//! ```rust
//! use burn::tensor::{Device, Int, Tensor};
//! use burn_deterministic_tensor::{fixed_order, report};
//!
//! let device = Device::flex();
//! let x = Tensor::<1>::from_data([1.0, 2.0, 3.0], &device);
//! let indices = Tensor::<1, Int>::from_data([2, 2, 0], &device);
//! let _ = fixed_order::gather(x, 0, indices);
//!
//! let report = report::report();
//! println!("{report}");
//! assert!(report.to_string().contains("pairwise gather"));
//! ```

use burn::tensor::Device;
use burn_deterministic_core::autotune::FrontDoor;
pub use burn_deterministic_core::report::{
    reset, ConfigurationReport, DeterminismReport, DeviceReport, Rewrite,
};
/// The interpolation mode and map layout a resize's [`Rewrite`] names.
pub use burn_deterministic_core::{Layout, Mode};

/// Counts `rewrite` on `device`.
pub(crate) fn record(device: &Device, rewrite: Rewrite) {
    burn_deterministic_core::report::record(
        ("burn 0.22", format!("{device:?}")),
        || (backend_name(device), autotuned(device)),
        rewrite,
        true,
    );
}

/// What this crate computed in this process so far: see the [module](self).
pub fn report() -> DeterminismReport {
    burn_deterministic_core::report::report(FrontDoor::Tensor)
}

/// Counts one made-up rewrite on `device`: what [`record`] costs per call, for the benchmark
/// that compares it with a training step. Not part of the API.
#[doc(hidden)]
pub fn record_for_benchmark(device: &Device) {
    record(device, Rewrite::FixedOrderSum);
}

fn backend_name(device: &Device) -> String {
    use burn::backend::{Backend, Dispatch};
    Dispatch::name(device.as_dispatch())
}

fn autotuned(device: &Device) -> bool {
    #[cfg(feature = "autotune-check")]
    {
        crate::autotune::check(device).is_err()
    }
    #[cfg(not(feature = "autotune-check"))]
    {
        let _ = device;
        false
    }
}
