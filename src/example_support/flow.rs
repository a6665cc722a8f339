//! The Burn 0.21 front door of the examples' shared `main` flow
//! (`burn_deterministic_vision::run::flow`).

use burn_deterministic_vision::run::flow::FrontDoor;

pub use burn_deterministic_vision::run::flow::run_example;

/// The decorator on Burn 0.21: a run the check starts pins its autotune cache to a fresh
/// folder (`burn_deterministic::train::enter_check_run`); the report is the decorator's.
pub const BURN_021: FrontDoor = FrontDoor {
    burn: "0.21",
    enter_check_run: burn_deterministic::train::enter_check_run,
    check_env: &[],
    report: || {
        let report = burn_deterministic::report::report();
        (report.to_string(), report.to_json())
    },
    checkpoint_extension: "mpk",
};
