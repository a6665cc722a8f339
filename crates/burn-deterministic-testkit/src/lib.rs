//! What the tests of both front doors share and that does not depend on Burn (the two front
//! doors use two Burn versions whose types differ): the PyTorch golden vectors as read from the
//! repository's test data, helper tests run in new processes, temporary directories, and the
//! medians criterion wrote for a benchmark run. Each test suite turns a case into its Burn
//! version's options and dtypes itself.

pub mod child;
pub mod examples;
pub mod golden;

use std::path::{Path, PathBuf};

/// A new empty directory under the system's temporary directory, named after `label`, the
/// process and a counter (parallel tests never share one). It is removed when dropped, unless
/// its thread is panicking: a failing test keeps what its run wrote, and says where.
pub fn fresh_dir(label: &str) -> ScratchDir {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bd-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    ScratchDir(dir)
}

/// A directory of [`fresh_dir`], read as a [`Path`].
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for inspection: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Every file below `dir`, recursively (none when it does not exist).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The offsets of a deformable convolution (`[offset channels, out, out]`, row-major; one
/// offset group, a square `kernel`, stride and dilation 1) that move every sample of an
/// `out × out` output, padded by `padding`, onto the point `(point, point)` of the input: each
/// of its four neighbours then receives a contribution from every sample, so a backward that
/// adds them with float atomics meets them in a different order from run to run.
pub fn crowded_deform_offsets(kernel: usize, out: usize, padding: usize, point: f64) -> Vec<f64> {
    let taps = kernel * kernel;
    (0..2 * taps * out * out)
        .map(|i| {
            let (pixel, channel) = (i % (out * out), i / (out * out));
            let (tap, axis) = (channel / 2, channel % 2);
            let (out_pos, tap_pos) = match axis {
                0 => (pixel / out, tap / kernel),
                _ => (pixel % out, tap % kernel),
            };
            point - (out_pos + tap_pos) as f64 + padding as f64
        })
        .collect()
}

/// Criterion's median, in seconds, of benchmark `id` of `group` in the latest run, read from
/// the estimates it wrote under `target` (`target/criterion/<group>/<id>/new/estimates.json`,
/// `/` in the group written `_`). `None` where that benchmark did not run.
pub fn criterion_median(target: &Path, group: &str, id: &str) -> Option<f64> {
    let path = target
        .join("criterion")
        .join(group.replace('/', "_"))
        .join(id)
        .join("new/estimates.json");
    let estimates: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    Some(estimates["median"]["point_estimate"].as_f64()? * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_dirs_are_empty_distinct_walked_and_removed() {
        let (a, b) = (fresh_dir("kit"), fresh_dir("kit"));
        assert_ne!(*a, *b);
        assert!(walk(&a).is_empty());
        std::fs::create_dir_all(a.join("x/y")).unwrap();
        std::fs::write(a.join("x/y/file"), b"1").unwrap();
        assert_eq!(walk(&a), [a.join("x/y/file")]);
        let paths = [a.to_path_buf(), b.to_path_buf()];
        drop((a, b));
        for path in paths {
            assert!(!path.exists(), "{path:?} left behind");
        }
    }

    #[test]
    fn a_failing_test_keeps_its_dir() {
        let path = std::thread::spawn(|| {
            let dir = fresh_dir("kit-failing");
            std::panic::panic_any(dir.to_path_buf());
        })
        .join()
        .expect_err("the thread panics")
        .downcast::<PathBuf>()
        .expect("the panic carries the path");
        assert!(path.is_dir(), "{path:?} was removed");
        std::fs::remove_dir_all(*path).unwrap();
    }
}
