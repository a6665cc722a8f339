//! What a deterministic training on Burn 0.22 needs beyond the functions (feature `train`):
//!
//! - [`parameter_hash`], a SHA-256 of a module's float parameters, to compare runs bit for bit
//!   (the same definition as the Burn 0.21 crate's: every float parameter's bytes in the
//!   module's visiting order);
//! - [`check_determinism`], the fresh-process check: the program's own training, run again in
//!   new processes, each tuning CubeCL's autotune afresh (its persistent cache off), compared by
//!   parameter hash; same flag, output and exit codes as the Burn 0.21 crate's.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use burn_deterministic_core::check::ParameterHasher;
use std::process::ExitCode;

pub use burn_deterministic_core::check::{
    CheckError, CheckReport, DeterminismCheck, CHECK_AUTOTUNE_DIR_ENV, CHECK_RUN_ENV, HASH_LINE,
};

/// CubeCL 0.11's switch for its persistent autotune cache: off in every run the check starts,
/// so that each run tunes afresh instead of reading what an earlier run stored.
pub const AUTOTUNE_CACHE_ENV: (&str, &str) = ("CUBECL_AUTOTUNE_CACHE", "0");

/// SHA-256, as 64 lowercase hex digits, over the bytes of every float parameter of `module`, in
/// the order [`Module::visit`] visits them (the fields, depth first, as `#[derive(Module)]`
/// declares them), each as its `TensorData` holds it (row-major, in the parameter's dtype,
/// little-endian). Integer and boolean parameters are not included.
///
/// ```rust
/// use burn::nn::LinearConfig;
/// use burn::tensor::Device;
/// use burn_deterministic_tensor::train::parameter_hash;
///
/// let linear = LinearConfig::new(3, 2).init(&Device::flex());
/// let hash = parameter_hash(&linear);
/// assert_eq!(hash.len(), 64);
/// assert_eq!(hash, parameter_hash(&linear.clone()));
/// ```
pub fn parameter_hash<M: Module>(module: &M) -> String {
    struct Collect(ParameterHasher);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.update(param.val().into_data().as_bytes());
        }
    }
    let mut collect = Collect(ParameterHasher::new());
    module.visit(&mut collect);
    collect.0.finish()
}

/// Prints `module`'s [`parameter_hash`] on stdout as the line the check reads ([`HASH_LINE`]),
/// and returns it. Call it at the end of the training that the check runs.
pub fn print_parameter_hash<M: Module>(module: &M) -> String {
    let hash = parameter_hash(module);
    println!("{HASH_LINE}{hash}");
    hash
}

/// The first thing in a training program's `main`: when `flag` is among the program's
/// arguments, runs the program again `runs` times in new processes (the same arguments without
/// `flag`), each tuning CubeCL's autotune afresh ([`AUTOTUNE_CACHE_ENV`]), reads the hash each
/// run prints with [`print_parameter_hash`], prints the comparison and returns the exit code:
/// success when every hash is equal, 1 when they differ, 2 when a run failed. Without `flag` it
/// returns `None` and the program trains as usual.
///
/// ```rust,no_run
/// use burn_deterministic_tensor::train::{check_determinism, print_parameter_hash};
/// use std::process::ExitCode;
///
/// # fn train() -> burn::nn::Linear { unimplemented!() }
/// fn main() -> ExitCode {
///     if let Some(exit) = check_determinism("--check-determinism", 2) {
///         return exit;
///     }
///     let model = train();
///     print_parameter_hash(&model);
///     ExitCode::SUCCESS
/// }
/// ```
pub fn check_determinism(flag: &str, runs: usize) -> Option<ExitCode> {
    burn_deterministic_core::check::check_determinism_with(flag, runs, || {}, &[AUTOTUNE_CACHE_ENV])
}
