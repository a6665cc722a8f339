//! The fresh-process determinism check: the user's training, run again in new processes of the
//! same executable, each with an empty CubeCL autotune cache, compared by parameter hash.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

/// Set in every run the check starts: the run's number, from 1.
pub const CHECK_RUN_ENV: &str = "BURN_DETERMINISTIC_CHECK_RUN";

/// Set in every run the check starts: an empty directory for CubeCL's autotune cache, pinned by
/// [`check_determinism`] (or [`enter_check_run`]) before any CubeCL device exists, so that no
/// two runs share tuning results.
pub const CHECK_AUTOTUNE_DIR_ENV: &str = "BURN_DETERMINISTIC_CHECK_AUTOTUNE_DIR";

/// What precedes the parameter hash on the stdout line through which a run reports it
/// ([`print_parameter_hash`]); the check reads the last such line of each run.
pub const HASH_LINE: &str = "burn-deterministic parameter hash: ";

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
    let Some(dir) = std::env::var_os(CHECK_AUTOTUNE_DIR_ENV) else {
        return;
    };
    use crate::determinism::PinCacheError;
    match crate::determinism::use_autotune_cache_dir(PathBuf::from(dir)) {
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
    enter_check_run();
    if !std::env::args_os().skip(1).any(|arg| arg == flag) {
        return None;
    }
    let check = match DeterminismCheck::of_this_program(flag, runs) {
        Ok(check) => check,
        Err(error) => {
            eprintln!("burn-deterministic check: {error}");
            return Some(ExitCode::from(2));
        }
    };
    Some(match check.run() {
        Ok(report) => {
            println!("{report}");
            report.exit_code()
        }
        Err(error) => {
            eprintln!("burn-deterministic check: {error}");
            ExitCode::from(2)
        }
    })
}

/// Runs a program several times in new processes and compares the parameter hashes they print
/// ([`HASH_LINE`]). [`check_determinism`] is the usual way in; this type is for a program that
/// chooses its runs' arguments itself (say, one output folder per run).
#[derive(Clone)]
pub struct DeterminismCheck {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    runs: usize,
    per_run_args: Option<PerRunArgs>,
}

type PerRunArgs = std::sync::Arc<dyn Fn(usize) -> Vec<OsString>>;

impl fmt::Debug for DeterminismCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeterminismCheck")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

impl DeterminismCheck {
    /// `runs` runs (at least 2) of `program` with `args`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        runs: usize,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            runs: runs.max(2),
            per_run_args: None,
        }
    }

    /// `runs` runs of this program with its own arguments, less `flag`.
    pub fn of_this_program(flag: &str, runs: usize) -> std::io::Result<Self> {
        let args = std::env::args_os().skip(1).filter(|arg| arg != flag);
        Ok(Self::new(std::env::current_exe()?, args, runs))
    }

    /// Also sets `key=value` in every run's environment.
    pub fn with_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Appends `per_run(run)` to the arguments of run `run` (from 1).
    pub fn with_per_run_args(mut self, per_run: impl Fn(usize) -> Vec<OsString> + 'static) -> Self {
        self.per_run_args = Some(std::sync::Arc::new(per_run));
        self
    }

    /// Starts the runs one after the other and collects their hashes. Each run's stderr goes to
    /// this process's stderr; its stdout is read for the hash line and then passed on.
    pub fn run(&self) -> Result<CheckReport, CheckError> {
        let mut hashes = Vec::with_capacity(self.runs);
        for run in 1..=self.runs {
            let cache = std::env::temp_dir().join(format!(
                "burn-deterministic-check-{}-{run}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&cache);
            std::fs::create_dir_all(&cache).map_err(|e| CheckError::Start { run, error: e })?;
            eprintln!(
                "burn-deterministic check: run {run} of {} in a new process",
                self.runs
            );
            let mut command = Command::new(&self.program);
            command
                .args(&self.args)
                .args(
                    self.per_run_args
                        .as_ref()
                        .map(|f| f(run))
                        .unwrap_or_default(),
                )
                .env(CHECK_RUN_ENV, run.to_string())
                .env(CHECK_AUTOTUNE_DIR_ENV, &cache)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stderr(Stdio::inherit());
            let output = command.output();
            let _ = std::fs::remove_dir_all(&cache);
            let output = output.map_err(|error| CheckError::Start { run, error })?;
            let stdout = String::from_utf8_lossy(&output.stdout);
            print!("{stdout}");
            if !output.status.success() {
                return Err(CheckError::RunFailed {
                    run,
                    status: output.status.to_string(),
                });
            }
            let hash = stdout
                .lines()
                .rev()
                .find_map(|line| line.find(HASH_LINE).map(|at| &line[at + HASH_LINE.len()..]))
                .ok_or(CheckError::NoHash { run })?;
            hashes.push(hash.trim().to_string());
        }
        Ok(CheckReport { hashes })
    }
}

/// The hashes the runs printed, in run order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// One parameter hash per run.
    pub hashes: Vec<String>,
}

impl CheckReport {
    /// Whether every run printed the same hash.
    pub fn identical(&self) -> bool {
        self.hashes.windows(2).all(|pair| pair[0] == pair[1])
    }

    /// The process exit code for this outcome: success when identical, 1 otherwise.
    pub fn exit_code(&self) -> ExitCode {
        if self.identical() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (run, hash) in self.hashes.iter().enumerate() {
            writeln!(f, "run {} parameters SHA-256: {hash}", run + 1)?;
        }
        if self.identical() {
            write!(
                f,
                "determinism check passed: {} runs, identical parameters",
                self.hashes.len()
            )
        } else {
            write!(f, "determinism check FAILED: the parameter hashes differ")
        }
    }
}

/// Why the check could not compare the runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckError {
    /// A run could not be started (or its autotune directory made).
    Start {
        /// The run, from 1.
        run: usize,
        /// What failed.
        error: std::io::Error,
    },
    /// A run exited unsuccessfully.
    RunFailed {
        /// The run, from 1.
        run: usize,
        /// Its exit status.
        status: String,
    },
    /// A run printed no [`HASH_LINE`] (it did not call [`print_parameter_hash`]).
    NoHash {
        /// The run, from 1.
        run: usize,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start { run, error } => write!(f, "run {run} could not start: {error}"),
            Self::RunFailed { run, status } => write!(f, "run {run} failed: {status}"),
            Self::NoHash { run } => write!(
                f,
                "run {run} printed no `{HASH_LINE}` line: call \
                 burn_deterministic::train::print_parameter_hash at the end of the training"
            ),
        }
    }
}

impl std::error::Error for CheckError {}
