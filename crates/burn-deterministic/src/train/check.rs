//! The fresh-process determinism check: the user's training, run again in new processes of the
//! same executable, each with an empty CubeCL autotune cache, compared by parameter hash. The
//! orchestration is the engine's (`burn_deterministic_core::check`); this module adds Burn
//! 0.21's parameter hash, autotune pinning and per-step trace.

use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::optim::{GradientsParams, LearningRate, MultiGradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use burn_deterministic_core::check::check_run_autotune_dir;
pub use burn_deterministic_core::check::{
    CheckError, CheckReport, DeterminismCheck, CHECK_AUTOTUNE_DIR_ENV, CHECK_RUN_ENV, HASH_LINE,
};
use burn_deterministic_core::trace::{self, ModulePath, Traced};
use std::process::ExitCode;

/// Prints `module`'s [`parameter_hash`](super::parameter_hash) on stdout as the line the check
/// reads, and returns it. Call it at the end of the training that the check runs.
pub fn print_parameter_hash<B: burn::tensor::backend::Backend, M: burn::module::Module<B>>(
    module: &M,
) -> String {
    let hash = super::parameter_hash(module);
    println!("{HASH_LINE}{hash}");
    hash
}

/// In a run started by the check: pins CubeCL's autotune cache to the run's empty directory.
/// [`check_determinism`] calls it; a program that builds its own [`DeterminismCheck`] calls it
/// first thing in `main`, before any CubeCL device. Elsewhere it does nothing.
pub fn enter_check_run() {
    let Some(dir) = check_run_autotune_dir() else {
        return;
    };
    use crate::determinism::PinCacheError;
    match crate::determinism::use_autotune_cache_dir(dir) {
        Ok(()) | Err(PinCacheError::NoCubeclBackend) => {}
        Err(error) => eprintln!("burn-deterministic check: {error}"),
    }
}

/// The first thing in a training program's `main`: when `flag` is among the program's
/// arguments, runs the program again `runs` times in new processes (the same arguments without
/// `flag`), each with an empty autotune cache, reads the hash each run prints with
/// [`print_parameter_hash`], prints the comparison and returns the exit code: success when
/// every hash is equal, 1 when they differ, 2 when a run failed. Without `flag` it returns
/// `None` and the program trains as usual.
///
/// ```rust,no_run
/// use burn_deterministic::train::{check_determinism, print_parameter_hash};
/// use std::process::ExitCode;
///
/// # fn train() -> burn::nn::Linear<burn::backend::NdArray> { unimplemented!() }
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
    burn_deterministic_core::check::check_determinism_with(flag, runs, enter_check_run, &[])
}

/// In a run the fresh-process check started: records the hash of every float parameter's
/// gradient in `grads` (the result of `loss.backward()`) at training step `step`, named by its
/// module path (`decoder.up2.conv.weight`). When the runs' final hashes differ, the check then
/// reports the first step and parameter whose gradient differed (`first difference: …`).
/// Outside a check run it returns at once (one atomic read).
pub fn record_gradients<B: AutodiffBackend, M: Module<B>>(
    step: u64,
    module: &M,
    grads: &B::Gradients,
) {
    record(step, module, Source::Gradients(grads));
}

/// [`record_gradients`] for training code that cannot reach the gradients (a `Learner`'s
/// step): records every float parameter's value after step `step`.
pub fn record_values<B: AutodiffBackend, M: Module<B>>(step: u64, module: &M) {
    record(step, module, Source::Values);
}

/// Records every float parameter of `module` from `source`, in a run the check started.
fn record<B: AutodiffBackend, M: Module<B>>(step: u64, module: &M, source: Source<'_, B>) {
    if trace::tracing() {
        module.visit(&mut Recorder {
            step,
            path: ModulePath::default(),
            source,
        });
    }
}

/// Where a [`Recorder`] reads each parameter's bytes.
enum Source<'a, B: AutodiffBackend> {
    /// Its gradient in the result of `loss.backward()`.
    Gradients(&'a B::Gradients),
    /// Its gradient in an optimizer's `GradientsParams`.
    OptimizerGradients(&'a GradientsParams),
    /// Its value.
    Values,
}

/// Records every float parameter's gradient or value in the run's trace.
struct Recorder<'a, B: AutodiffBackend> {
    step: u64,
    path: ModulePath,
    source: Source<'a, B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Recorder<'_, B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.enter(name);
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.exit();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let (traced, data) = match &self.source {
            Source::Gradients(gradients) => (
                Traced::Gradient,
                param.val().grad(gradients).map(|grad| grad.into_data()),
            ),
            Source::OptimizerGradients(gradients) => (
                Traced::Gradient,
                gradients
                    .get::<B::InnerBackend, D>(param.id)
                    .map(|grad| grad.into_data()),
            ),
            Source::Values => (Traced::Value, Some(param.val().into_data())),
        };
        if let Some(data) = data {
            trace::record_bytes(self.step, &self.path, traced, data.as_bytes());
        }
    }
}

/// Any burn-train optimizer, with each step's gradients recorded in the check's trace (as
/// [`record_gradients`] does), for training code that cannot call it itself: a `Learner`.
/// Outside a check run it only counts steps. With several devices' gradients
/// (`step_multi`), it records the parameters' values after the step instead.
///
/// ```rust
/// # #[cfg(feature = "ndarray")] {
/// use burn::backend::{Autodiff, NdArray};
/// use burn::nn::Linear;
/// use burn::optim::AdamConfig;
/// use burn_deterministic::train::TracedOptimizer;
///
/// type B = Autodiff<NdArray>;
/// let optimizer = TracedOptimizer::new(AdamConfig::new().init::<B, Linear<B>>());
/// # let _ = optimizer;
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TracedOptimizer<O> {
    optimizer: O,
    step: u64,
}

impl<O> TracedOptimizer<O> {
    /// `optimizer`, its steps numbered from 1.
    pub fn new(optimizer: O) -> Self {
        Self { optimizer, step: 0 }
    }
}

impl<M, B, O> Optimizer<M, B> for TracedOptimizer<O>
where
    M: AutodiffModule<B>,
    B: AutodiffBackend,
    O: Optimizer<M, B>,
{
    type Record = O::Record;

    fn step(&mut self, lr: LearningRate, module: M, grads: GradientsParams) -> M {
        self.step += 1;
        record(self.step, &module, Source::OptimizerGradients(&grads));
        self.optimizer.step(lr, module, grads)
    }

    fn step_multi(&mut self, lr: LearningRate, module: M, grads: MultiGradientsParams) -> M {
        self.step += 1;
        let module = self.optimizer.step_multi(lr, module, grads);
        record_values::<B, M>(self.step, &module);
        module
    }

    fn to_record(&self) -> Self::Record {
        self.optimizer.to_record()
    }

    fn load_record(self, record: Self::Record) -> Self {
        Self {
            optimizer: self.optimizer.load_record(record),
            step: self.step,
        }
    }
}
