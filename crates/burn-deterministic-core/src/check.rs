//! The fresh-process determinism check, without Burn: a training program run again in new
//! processes of the same executable, each with an empty directory for CubeCL's autotune cache,
//! compared by the parameter hash each run prints. Both front doors' `train::check_determinism`
//! are this flow with their Burn version's autotune pinning and parameter hash.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

/// Set in every run the check starts: the run's number, from 1.
pub const CHECK_RUN_ENV: &str = "BURN_DETERMINISTIC_CHECK_RUN";

/// Set in every run the check starts: an empty directory for CubeCL's autotune cache, which the
/// front door pins (its `train::enter_check_run`) before any CubeCL device exists, so that no two
/// runs share tuning results.
pub const CHECK_AUTOTUNE_DIR_ENV: &str = "BURN_DETERMINISTIC_CHECK_AUTOTUNE_DIR";

/// What precedes the parameter hash on the stdout line through which a run reports it (the
/// front doors' `train::print_parameter_hash`); the check reads the last such line of each run.
pub const HASH_LINE: &str = "burn-deterministic parameter hash: ";

/// The first thing in a training program's `main`, given the front door's `enter_check_run`:
/// calls `enter_check_run`, then, when `flag` is among the program's arguments, runs the
/// program again `runs` times in new processes (the same arguments without `flag`), each with
/// an empty autotune cache, reads the hash each run prints, prints the comparison and returns
/// the exit code: success when every hash is equal, 1 when they differ, 2 when a run failed.
/// Without `flag` it returns `None` and the program trains as usual.
///
/// `child_env` is set in every run on top of the check's own variables (a front door's way to
/// start each run with an empty autotune cache where it cannot pin one).
pub fn check_determinism_with(
    flag: &str,
    runs: usize,
    enter_check_run: impl FnOnce(),
    child_env: &[(&str, &str)],
) -> Option<ExitCode> {
    enter_check_run();
    if !std::env::args_os().skip(1).any(|arg| arg == flag) {
        return None;
    }
    let check = match DeterminismCheck::of_this_program(flag, runs) {
        Ok(check) => child_env
            .iter()
            .fold(check, |check, (key, value)| check.with_env(key, value)),
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

/// SHA-256 over the bytes of a model's float parameters, as 64 lowercase hex digits: the
/// parameter hash both front doors print. Each front door feeds it every float parameter's
/// bytes (its `TensorData`: row-major, in the parameter's dtype, little-endian) in the order its
/// Burn version's module visitor visits them.
#[derive(Default)]
pub struct ParameterHasher(sha2::Sha256);

impl ParameterHasher {
    /// A hasher that has seen no parameter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one parameter's bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        self.0.update(bytes);
    }

    /// The hash of every parameter added.
    pub fn finish(self) -> String {
        use sha2::Digest;
        self.0
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// In a run the check started, the autotune directory to pin (see [`CHECK_AUTOTUNE_DIR_ENV`]).
pub fn check_run_autotune_dir() -> Option<PathBuf> {
    std::env::var_os(CHECK_AUTOTUNE_DIR_ENV).map(PathBuf::from)
}

/// Runs a program several times in new processes and compares the parameter hashes they print
/// ([`HASH_LINE`]). [`check_determinism_with`] (through each front door's `check_determinism`)
/// is the usual way in; this type is for a program that chooses its runs' arguments itself
/// (say, one output folder per run).
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
        // Per check, process and run: checks that run side by side in one process (tests)
        // must not share a run's files.
        static CHECKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let check = CHECKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut hashes = Vec::with_capacity(self.runs);
        let mut traces = Vec::with_capacity(self.runs);
        for run in 1..=self.runs {
            let name = format!("{}-{check}-{run}", std::process::id());
            let trace = std::env::temp_dir().join(format!("burn-deterministic-trace-{name}"));
            let _ = std::fs::remove_file(&trace);
            let cache = std::env::temp_dir().join(format!("burn-deterministic-check-{name}"));
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
                .env(crate::trace::CHECK_TRACE_ENV, &trace)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stderr(Stdio::inherit());
            let output = command.output();
            let _ = std::fs::remove_dir_all(&cache);
            traces.push(std::fs::read_to_string(&trace).unwrap_or_default());
            let _ = std::fs::remove_file(&trace);
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
        // Where the first run that disagrees with run 1 first differs from it.
        let first_difference = hashes
            .iter()
            .position(|hash| *hash != hashes[0])
            .and_then(|run| crate::trace::first_difference(&traces[0], &traces[run]));
        Ok(CheckReport {
            traced: traces.iter().any(|trace| !trace.is_empty()),
            hashes,
            first_difference,
        })
    }
}

/// The hashes the runs printed, in run order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// One parameter hash per run.
    pub hashes: Vec<String>,
    /// Where the first run whose hash differs from run 1's first differs from it, read from
    /// the runs' traces (the front door's `train::record_gradients`); `None` when the hashes
    /// agree or the traces do not tell.
    pub first_difference: Option<crate::trace::FirstDifference>,
    /// Whether any run wrote a trace.
    pub traced: bool,
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
            match (&self.first_difference, self.traced) {
                (Some(difference), _) => writeln!(f, "{difference}")?,
                (None, false) => writeln!(
                    f,
                    "first difference: not located (the training traced no step: call the \
                     front door's `train::record_gradients` once per step)"
                )?,
                (None, true) => writeln!(
                    f,
                    "first difference: not located (every traced step agrees: the runs \
                     differ after the last step traced)"
                )?,
            }
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
    /// A run printed no [`HASH_LINE`] (it did not call the front door's
    /// `train::print_parameter_hash`).
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
                "run {run} printed no `{HASH_LINE}` line: call the front door's \
                 `train::print_parameter_hash` at the end of the training"
            ),
        }
    }
}

impl std::error::Error for CheckError {}
