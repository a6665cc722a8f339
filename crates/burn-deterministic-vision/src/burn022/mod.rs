//! The Burn 0.22.1 glue: the models ([`models`]), burn-train's steps, metrics, loaders and
//! strategy ([`train`]), Burn 0.22's `Dataset` over the Burn-free samples, and the front door of
//! the shared `main` flow ([`BURN_022`]).

pub mod models;
pub mod train;

use crate::run::flow::FrontDoor;
use burn022::data::dataset::DatasetError;

/// What Burn 0.22's `Dataset::get` returns.
type Got<I> = Result<I, DatasetError>;

/// An index past the end is an error naming it (Burn 0.22's convention is a panic; an error
/// reaches burn-train's interrupter instead).
fn got<I>(sample: Option<I>, index: usize) -> Got<I> {
    sample.ok_or_else(|| {
        DatasetError::new(std::io::Error::other(format!(
            "sample {index} is past the end of the dataset"
        )))
    })
}

crate::sample_datasets!(burn022);

/// The tensor-level crate on Burn 0.22.1: the check's runs tune CubeCL's autotune afresh (its
/// persistent cache off); the report is `burn_deterministic_tensor::report`; burn-train writes
/// burnpack checkpoints.
pub const BURN_022: FrontDoor = FrontDoor {
    burn: "0.22",
    enter_check_run: || {},
    check_env: &[burn_deterministic_tensor::train::AUTOTUNE_CACHE_ENV],
    report: || {
        let report = burn_deterministic_tensor::report::report();
        (report.to_string(), report.to_json())
    },
    checkpoint_extension: "bpk",
};
