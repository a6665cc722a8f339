//! Where two runs first differ: each run the check starts writes a trace — one line per training
//! step and parameter, with the hash of that parameter's gradient (or value) — and the check
//! compares the traces line by line when the final hashes differ.
//!
//! The trace is written only in runs the check started ([`CHECK_TRACE_ENV`] set); elsewhere a
//! [`Trace`] is inactive and every call on it returns at once, so a training program may call
//! the front door's recording function every step at no measurable cost.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;

/// Set in every run the check starts: the file that run writes its trace to.
pub const CHECK_TRACE_ENV: &str = "BURN_DETERMINISTIC_CHECK_TRACE";

/// What a trace line hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Traced {
    /// The parameter's gradient at that step.
    Gradient,
    /// The parameter's value after that step (for training code that cannot reach gradients).
    Value,
}

impl Traced {
    fn name(self) -> &'static str {
        match self {
            Self::Gradient => "gradient",
            Self::Value => "value",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "gradient" => Some(Self::Gradient),
            "value" => Some(Self::Value),
            _ => None,
        }
    }
}

/// A run's trace file, open only in runs the check started.
#[derive(Debug, Default)]
pub struct Trace {
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl Trace {
    /// The trace of this run: the file [`CHECK_TRACE_ENV`] names, or an inactive trace.
    pub fn from_env() -> Self {
        let file = std::env::var_os(CHECK_TRACE_ENV)
            .map(PathBuf::from)
            .and_then(|path| match std::fs::File::create(&path) {
                Ok(file) => Some(std::io::BufWriter::new(file)),
                Err(error) => {
                    eprintln!(
                        "burn-deterministic check: no trace at {}: {error}",
                        path.display()
                    );
                    None
                }
            });
        Self { file }
    }

    /// Whether lines are written (a run the check started).
    pub fn is_active(&self) -> bool {
        self.file.is_some()
    }

    /// Records that at `step` the `traced` of `parameter` (its module path) hashed to `hash`.
    pub fn record(&mut self, step: u64, parameter: &str, traced: Traced, hash: &str) {
        if let Some(file) = &mut self.file {
            // A failed write leaves a shorter trace: the comparison reports what it can.
            let _ = writeln!(file, "{step}\t{}\t{parameter}\t{hash}", traced.name());
            let _ = file.flush();
        }
    }
}

/// Calls `record` with this process's trace when this is a run the check started (the trace is
/// opened on first use); elsewhere returns at once. The front doors' per-step recording
/// functions go through it, so that a training program calls them unconditionally.
pub fn with_run_trace(record: impl FnOnce(&mut Trace)) {
    if let Some(trace) = run_trace() {
        record(&mut trace.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// This process's trace, opened on first use; `None` outside a run the check started.
fn run_trace() -> Option<&'static std::sync::Mutex<Trace>> {
    static TRACE: std::sync::OnceLock<Option<std::sync::Mutex<Trace>>> = std::sync::OnceLock::new();
    TRACE
        .get_or_init(|| {
            let trace = Trace::from_env();
            trace.is_active().then(|| std::sync::Mutex::new(trace))
        })
        .as_ref()
}

/// The module path of the parameter a front door's module visitor is at (`decoder.up2.conv`
/// plus the field), kept from Burn's `enter_module` / `exit_module` calls.
#[derive(Debug, Default)]
pub struct ModulePath(Vec<String>);

impl ModulePath {
    /// Burn's visitor entered a submodule or field `name`.
    pub fn enter(&mut self, name: &str) {
        self.0.push(name.to_string());
    }

    /// Burn's visitor left the innermost one.
    pub fn exit(&mut self) {
        self.0.pop();
    }

    /// The path, dot-separated.
    pub fn joined(&self) -> String {
        self.0.join(".")
    }
}

/// Records in this run's trace (when the check started it) the hash of `bytes`, the `traced`
/// of the parameter at `path`, at `step`.
pub fn record_bytes(step: u64, path: &ModulePath, traced: Traced, bytes: &[u8]) {
    with_run_trace(|trace| {
        let mut hasher = crate::check::ParameterHasher::new();
        hasher.update(bytes);
        trace.record(step, &path.joined(), traced, &hasher.finish());
    });
}

/// Whether this is a run the check started and its trace is being written (the front doors'
/// recording functions return at once otherwise, before visiting any parameter).
pub fn tracing() -> bool {
    run_trace().is_some()
}

/// The first step at which two runs' traces differ, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FirstDifference {
    /// The training step (as the program numbered it).
    pub step: u64,
    /// The first parameter (in the trace's order) whose hash differs at that step.
    pub parameter: String,
    /// Whether its gradient or its value differs.
    pub traced: Traced,
    /// How many parameters differ at that step.
    pub differing: usize,
    /// How many parameters the step traced.
    pub parameters: usize,
}

impl fmt::Display for FirstDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "first difference: step {}, {} of `{}` ({} of {} parameters differ at that step)",
            self.step,
            self.traced.name(),
            self.parameter,
            self.differing,
            self.parameters
        )
    }
}

/// One trace: per step, per (what, parameter) in order, the hash.
type Steps = BTreeMap<u64, Vec<((Traced, String), String)>>;

fn parse(trace: &str) -> Steps {
    let mut steps = Steps::new();
    for line in trace.lines() {
        let mut fields = line.splitn(4, '\t');
        let (Some(step), Some(traced), Some(parameter), Some(hash)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(step), Some(traced)) = (step.parse(), Traced::parse(traced)) else {
            continue;
        };
        steps
            .entry(step)
            .or_default()
            .push(((traced, parameter.to_string()), hash.to_string()));
    }
    steps
}

/// Where `second` first differs from `first` (two traces' text), gradients before values at a
/// step; `None` when every step both traced agrees (a trace that stops early is compared as
/// far as it goes).
pub fn first_difference(first: &str, second: &str) -> Option<FirstDifference> {
    let (first, second) = (parse(first), parse(second));
    for (step, lines) in &first {
        let Some(other) = second.get(step) else {
            continue;
        };
        let other: BTreeMap<&(Traced, String), &String> =
            other.iter().map(|(key, hash)| (key, hash)).collect();
        let differs = |(key, hash): &&((Traced, String), String)| {
            other.get(key).is_some_and(|theirs| *theirs != hash)
        };
        let differing: Vec<&((Traced, String), String)> = lines.iter().filter(differs).collect();
        // Gradients first: a value differs because a gradient did.
        let first_differing = differing
            .iter()
            .find(|((traced, _), _)| *traced == Traced::Gradient)
            .or(differing.first());
        if let Some(((traced, parameter), _)) = first_differing {
            let count = |kind: Traced| lines.iter().filter(|((t, _), _)| *t == kind).count();
            let kind_differing = differing.iter().filter(|((t, _), _)| t == traced).count();
            return Some(FirstDifference {
                step: *step,
                parameter: parameter.clone(),
                traced: *traced,
                differing: kind_differing,
                parameters: count(*traced),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(lines: &[(u64, Traced, &str, &str)]) -> String {
        lines
            .iter()
            .map(|(step, traced, parameter, hash)| {
                format!("{step}\t{}\t{parameter}\t{hash}\n", traced.name())
            })
            .collect()
    }

    #[test]
    fn the_first_step_and_parameter_that_differ_are_named() {
        use Traced::{Gradient, Value};
        let a = trace(&[
            (1, Gradient, "encoder.weight", "aa"),
            (1, Gradient, "decoder.up2.conv.weight", "bb"),
            (1, Gradient, "decoder.up2.conv.bias", "cc"),
            (2, Gradient, "encoder.weight", "dd"),
            (2, Gradient, "decoder.up2.conv.weight", "ee"),
            (2, Gradient, "decoder.up2.conv.bias", "ff"),
        ]);
        let b = a.replace("\tee", "\tXX").replace("\tdd", "\tYY");
        let difference = first_difference(&a, &b).expect("the traces differ");
        assert_eq!(difference.step, 2);
        assert_eq!(difference.parameter, "encoder.weight");
        assert_eq!((difference.differing, difference.parameters), (2, 3));
        assert_eq!(
            difference.to_string(),
            "first difference: step 2, gradient of `encoder.weight` (2 of 3 parameters differ at \
             that step)"
        );
        assert_eq!(first_difference(&a, &a), None);
        // A value that differs is named only where no gradient does.
        let values = trace(&[(3, Value, "w", "1"), (3, Gradient, "v", "2")]);
        let other = trace(&[(3, Value, "w", "9"), (3, Gradient, "v", "2")]);
        let difference = first_difference(&values, &other).unwrap();
        assert_eq!(
            (difference.traced, difference.parameter.as_str()),
            (Value, "w")
        );
        // Garbage lines and missing steps are skipped.
        assert_eq!(first_difference("nonsense\n", &a), None);
    }

    #[test]
    fn an_inactive_trace_writes_nothing() {
        let mut trace = Trace::default();
        assert!(!trace.is_active());
        trace.record(1, "w", Traced::Gradient, "00");
    }
}
