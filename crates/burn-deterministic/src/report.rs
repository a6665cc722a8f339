//! What the decorator did in this process: per device, how many times each rewrite ran, which
//! order hazards were left to the inner backend, and what can still make two runs differ.
//!
//! The counts are kept from the first op on, for the whole process (every thread, every
//! `DeterministicBackend<B>` type); [`report`] takes a snapshot, [`reset`] starts them again.
//! Only rewritten ops, and ops with an order hazard that the configuration left to `B`, are
//! counted: the ops the decorator forwards unchanged cost nothing extra.
//!
//! ```rust
//! # #[cfg(feature = "ndarray")] {
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::module::interpolate;
//! use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
//! use burn::tensor::Tensor;
//! use burn_deterministic::report::{report, Rewrite};
//! use burn_deterministic::{DeterministicBackend, Mode};
//!
//! type Train = Autodiff<DeterministicBackend<NdArray>>;
//! let x = Tensor::<Train, 4>::ones([1, 1, 4, 4], &Default::default()).require_grad();
//! let y = interpolate(x.clone(), [8, 8], InterpolateOptions::new(InterpolateMode::Bilinear));
//! y.sum().backward();
//!
//! let report = report();
//! println!("{report}");
//! let backward = report.devices[0].rewrites.iter().find(|(rewrite, _)| {
//!     matches!(rewrite, Rewrite::ResizeBackward { mode: Mode::Bilinear, .. })
//! });
//! assert!(backward.is_some_and(|(_, count)| *count >= 1));
//! # }
//! ```

//! The tables and the report are the engine's (`burn_deterministic_core::report`), shared with
//! the Burn 0.22 crate; this module counts the decorator's rewrites into them.

use burn_backend::Backend;
use burn_deterministic_core::autotune::FrontDoor;
pub use burn_deterministic_core::report::{
    reset, ConfigurationReport, DeterminismReport, DeviceReport, Rewrite,
};

/// Counts `rewrite` on `device`: applied, or (`applied: false`) an op with an order hazard that
/// the configuration left to `B`.
pub(crate) fn record<B: Backend>(device: &B::Device, rewrite: Rewrite, applied: bool) {
    burn_deterministic_core::report::record(
        (core::any::type_name::<B>(), format!("{device:?}")),
        || {
            (
                B::name(device),
                crate::device::backend_profile::<B>(device).autotuned,
            )
        },
        rewrite,
        applied,
    );
}

/// What the decorator did in this process so far: see the [module](self).
pub fn report() -> DeterminismReport {
    burn_deterministic_core::report::report(FrontDoor::Decorator)
}

/// Counts one made-up rewrite on a made-up backend: what [`record`] costs per rewritten op,
/// for the benchmark that compares it with a training step. Not part of the API.
#[doc(hidden)]
pub fn record_for_benchmark<B: Backend>(device: &B::Device) {
    record::<B>(device, Rewrite::FixedOrderSum, true);
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::module::interpolate;
    use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
    use burn::tensor::Tensor;
    use burn_deterministic_core::{Layout, Mode};

    type Train = Autodiff<crate::DeterministicBackend<Flex>>;

    fn count(report: &DeterminismReport, wanted: impl Fn(&Rewrite) -> bool) -> u64 {
        report
            .devices
            .iter()
            .filter(|device| device.backend.contains("flex"))
            .flat_map(|device| &device.rewrites)
            .filter(|(rewrite, _)| wanted(rewrite))
            .map(|(_, count)| count)
            .sum()
    }

    /// A forward and backward of each mode appear in the counts with their layouts; the JSON
    /// and the text carry them.
    #[test]
    fn resizes_are_counted_by_mode_and_layout() {
        let device = Default::default();
        let backward_of = |mode| move |rewrite: &Rewrite| matches!(rewrite, Rewrite::ResizeBackward { mode: m, layouts: [Layout::Dense, Layout::Dense] } if *m == mode);
        let before = count(&report(), backward_of(Mode::Bicubic));
        let x = Tensor::<Train, 4>::ones([1, 2, 5, 6], &device).require_grad();
        let y = interpolate(x, [9, 4], InterpolateOptions::new(InterpolateMode::Bicubic));
        y.sum().backward();
        let after = report();
        // Other tests of this process may resize too: at least this one.
        assert!(count(&after, backward_of(Mode::Bicubic)) > before);
        let text = after.to_string();
        assert!(text.contains("resize backward bicubic, dense"), "{text}");
        let json = after.to_json();
        let flex = json["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["backend"].as_str().unwrap().contains("flex"))
            .unwrap();
        assert!(
            flex["rewrites"]["resize backward bicubic, dense"]
                .as_u64()
                .unwrap()
                >= 1
        );
        assert_eq!(flex["autotuned"], false);
    }
}
