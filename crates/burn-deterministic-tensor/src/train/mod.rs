//! What a deterministic training on Burn 0.22 needs beyond the functions (feature `train`):
//!
//! - [`parameter_hash`], a SHA-256 of a module's float parameters, to compare runs bit for bit
//!   (the same definition as the Burn 0.21 crate's: every float parameter's bytes in the
//!   module's visiting order);
//! - [`check_determinism`], the fresh-process check: the program's own training, run again in
//!   new processes, each tuning CubeCL's autotune afresh (its persistent cache off), compared by
//!   parameter hash; same flag, output and exit codes as the Burn 0.21 crate's;
//! - [`record_gradients`] (and [`record_values`]), one call per training step: in the runs the
//!   check starts, a hash per parameter and step, so that when the runs differ the check names
//!   the first step and the parameter whose gradient differed (`first difference: …`);
//!   elsewhere they return at once; [`optimize_traced`] does the same for a burn-train
//!   `Learner`, from the model's `TrainStep::optimize`;
//! - [`FixedOrderDataParallel`], a burn-train learning strategy for several devices that sums
//!   the workers' gradients in device order (burn-train 0.22.1's own `MultiDevice` sums them in
//!   the order the workers finish, which with three or more devices changes the last bits from
//!   run to run);
//! - [`ResumableLoader`], so that a run resumed from a burn-train checkpoint sees the data order
//!   and random numbers of the uninterrupted run (the checkpoint holds neither);
//! - [`PlainProgress`], a burn-train renderer that prints a few readable lines per epoch where
//!   burn-train's own prints a `Debug` dump per item (no terminal: CI logs, files).

mod data_parallel;
mod progress;
mod resume;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::optim::{GradientsParams, ModuleOptimizer, MultiGradientsParams};
use burn::tensor::{Gradients, Tensor};
use burn_deterministic_core::check::ParameterHasher;
use burn_deterministic_core::trace::{self, ModulePath, Traced};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

pub use data_parallel::FixedOrderDataParallel;
pub use progress::PlainProgress;
pub use resume::{epoch_seed, ResumableLoader};

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

/// In a run the fresh-process check started: records the hash of every float parameter's
/// gradient in `grads` (the result of `loss.backward()`) at training step `step`, named by its
/// module path (`decoder.up2.conv.weight`). When the runs' final hashes differ, the check then
/// reports the first step and parameter whose gradient differed. Outside a check run it returns
/// at once (one atomic read).
///
/// ```rust
/// use burn::nn::LinearConfig;
/// use burn::tensor::{Device, Tensor};
/// use burn_deterministic_tensor::{fixed_order, train};
///
/// let device = Device::flex().autodiff();
/// let model = LinearConfig::new(4, 2).init(&device);
/// for step in 1..=2 {
///     let loss = fixed_order::mean(model.forward(Tensor::<2>::ones([3, 4], &device)));
///     let grads = loss.backward();
///     train::record_gradients(step, &model, &grads); // a no-op outside a check run
/// }
/// ```
pub fn record_gradients<M: Module>(step: u64, module: &M, grads: &Gradients) {
    record(step, module, Source::Gradients(grads));
}

/// [`record_gradients`] for training code that cannot reach the gradients: records every float
/// parameter's value after step `step`.
pub fn record_values<M: Module>(step: u64, module: &M) {
    record(step, module, Source::Values);
}

/// Optimizer steps [`optimize_traced`] and [`optimize_multi_traced`] have numbered in this
/// process.
static TRACED_STEPS: AtomicU64 = AtomicU64::new(0);

/// burn-train's optimizer step, with the step's gradients recorded in the check's trace (as
/// [`record_gradients`] does; steps numbered from 1 in this process): what a model's
/// `TrainStep::optimize` calls so that a `Learner`'s check says where runs differ. Outside a
/// check run it only counts the step.
///
/// ```rust
/// use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
/// use burn::optim::{GradientsParams, ModuleOptimizer};
/// use burn_deterministic_tensor::train::optimize_traced;
///
/// // In `impl TrainStep for Model { ... }`, next to `fn step`:
/// fn optimize(
///     model: burn::nn::Linear, // `self`
///     optim: &mut ModuleOptimizer,
///     lr: ModuleLearningRate,
///     grads: GradientsParams,
/// ) -> burn::nn::Linear {
///     optimize_traced(model, optim, lr, grads)
/// }
/// # let _ = optimize;
/// ```
pub fn optimize_traced<M: Module>(
    module: M,
    optim: &mut ModuleOptimizer,
    lr: ModuleLearningRate,
    grads: GradientsParams,
) -> M {
    let step = TRACED_STEPS.fetch_add(1, Ordering::Relaxed) + 1;
    record(step, &module, Source::Params(&grads));
    optim.step(lr, module, grads)
}

/// [`optimize_traced`] for a multi-device step (`TrainStep::optimize_multi`): the gradients are
/// spread over devices, so the parameters' values after the step are recorded instead.
pub fn optimize_multi_traced<M: Module>(
    module: M,
    optim: &mut ModuleOptimizer,
    lr: ModuleLearningRate,
    grads: MultiGradientsParams,
) -> M {
    let step = TRACED_STEPS.fetch_add(1, Ordering::Relaxed) + 1;
    let module = optim.step_multi(lr, module, grads);
    record(step, &module, Source::Values);
    module
}

/// Records every float parameter of `module` from `source`, in a run the check started.
fn record<M: Module>(step: u64, module: &M, source: Source<'_>) {
    if trace::tracing() {
        module.visit(&mut Recorder {
            step,
            path: ModulePath::default(),
            source,
        });
    }
}

/// Where a [`Recorder`] reads each parameter's bytes.
enum Source<'a> {
    /// Its gradient in the result of `loss.backward()`.
    Gradients(&'a Gradients),
    /// Its gradient in an optimizer's `GradientsParams`.
    Params(&'a GradientsParams),
    /// Its value.
    Values,
}

/// Records every float parameter's gradient or value in the run's trace.
struct Recorder<'a> {
    step: u64,
    path: ModulePath,
    source: Source<'a>,
}

impl ModuleVisitor for Recorder<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.enter(name);
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.exit();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let (traced, tensor) = match self.source {
            Source::Gradients(gradients) => (Traced::Gradient, param.val().grad(gradients)),
            Source::Params(gradients) => (Traced::Gradient, gradients.get::<D>(param.id)),
            Source::Values => (Traced::Value, Some(param.val())),
        };
        if let Some(tensor) = tensor {
            trace::record_bytes(self.step, &self.path, traced, tensor.into_data().as_bytes());
        }
    }
}
