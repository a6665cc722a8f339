//! Helper tests run in new processes, for checks that must span processes (thread pools,
//! atomics and autotune caches all start afresh in each).
//!
//! A test binary holds an ignored helper test that reads its case from [`CASE_ENV`] and prints
//! `KEY=value` lines; the parent runs `current_exe --exact <helper> --ignored --nocapture` with
//! [`run`] and reads them back with [`Child::values`].

use std::process::Command;

/// The environment variable that tells a helper test which case to run.
pub const CASE_ENV: &str = "BD_CHILD_CASE";

/// The case this process was started for, if it is a child.
pub fn case() -> Option<String> {
    std::env::var(CASE_ENV).ok()
}

/// What one child process did.
#[derive(Debug, Clone)]
pub struct Child {
    /// Whether it exited successfully.
    pub succeeded: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// Every value printed as `KEY=value`, in order. The pair may follow other text on its
    /// line (libtest prints `test NAME ... ` before the first output) after a space.
    pub fn values(&self, key: &str) -> Vec<String> {
        values_in(&self.stdout, key)
    }

    /// The one value printed as `KEY=value`; panics with the output otherwise.
    pub fn value(&self, key: &str) -> String {
        let values = self.values(key);
        assert_eq!(
            values.len(),
            1,
            "expected one {key}= line from the child:\n{}",
            self.stdout
        );
        values[0].clone()
    }

    /// Panics with the child's output unless it succeeded.
    pub fn expect_success(self, what: &str) -> Self {
        assert!(
            self.succeeded,
            "child {what} failed:\n{}\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Every value printed as `KEY=value` in `stdout`, in order (see [`Child::values`]).
pub fn values_in(stdout: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key}=");
    stdout
        .lines()
        .filter_map(|line| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(&prefix))
        })
        .map(str::to_string)
        .collect()
}

/// Runs the ignored test `helper` of this test binary for `case` in a new process, with `env`
/// set on top of the parent's environment.
pub fn run(helper: &str, case: &str, env: &[(&str, &str)]) -> Child {
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            helper,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE_ENV, case)
        .envs(env.iter().copied())
        .output()
        .expect("child test process starts");
    Child {
        succeeded: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_after_other_text() {
        let child = Child {
            succeeded: true,
            stdout: "test helper ... A=1\nB=2\nA=3 trailing\n".into(),
            stderr: String::new(),
        };
        assert_eq!(child.values("A"), ["1", "3"]);
        assert_eq!(child.value("B"), "2");
        assert!(child.values("C").is_empty());
    }
}
