//! What a deterministic training needs beyond the decorator (feature `train`):
//!
//! - [`FixedOrderDataParallel`], a burn-train learning strategy for several devices that sums
//!   the workers' gradients in device order (burn-train's own `MultiDevice` sums them in the
//!   order the workers finish, which with three or more devices changes the last bits from run
//!   to run);
//! - [`parameter_hash`], a SHA-256 of a model's parameters, to compare runs bit for bit;
//! - [`check_determinism`], the fresh-process check: the program's own training, run again in
//!   new processes, each with an empty autotune cache, compared by parameter hash; with
//!   [`record_gradients`] called once per step, it names the first step and parameter whose
//!   gradient differed;
//! - [`ResumableLoader`], so that a run resumed from a burn-train checkpoint sees the data order
//!   and random numbers of the uninterrupted run (the checkpoint holds neither);
//! - [`PlainProgress`], a burn-train renderer that prints a few readable lines per epoch where
//!   burn-train's own prints a `Debug` dump per iteration (no terminal: CI logs, files).

mod check;
mod data_parallel;
mod hash;
mod progress;
mod resume;

pub use check::{
    check_determinism, enter_check_run, print_parameter_hash, record_gradients, record_values,
    CheckError, CheckReport, DeterminismCheck, TracedOptimizer, CHECK_AUTOTUNE_DIR_ENV,
    CHECK_RUN_ENV, HASH_LINE,
};
pub use data_parallel::FixedOrderDataParallel;
pub use hash::parameter_hash;
pub use progress::PlainProgress;
pub use resume::{epoch_seed, ResumableLoader};
