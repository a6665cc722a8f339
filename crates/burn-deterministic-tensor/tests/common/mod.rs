//! What the tests of the Burn 0.22 front door share: the devices, the golden vectors, bits and
//! hashes, and helper tests run in new processes.
#![allow(dead_code)] // each test binary uses a part

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::{DType, Device, Tensor, TensorData};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Flex (pure-Rust CPU), with autodiff.
pub fn flex() -> Device {
    Device::flex().autodiff()
}

/// wgpu pinned to the Vulkan API (llvmpipe without a GPU: the OpenGL fallback computes wrong
/// numbers), with autodiff. Without an adapter the test **fails**: a wgpu test that cannot run
/// its check must not report success.
pub fn vulkan() -> Device {
    static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let (device, setup) = Device::wgpu_options()
                .graphics_api(WgpuBackend::Vulkan)
                .init_with_setup()
                .map_err(|e| format!("no Vulkan adapter for wgpu: {e}"))?;
            let info = setup.adapter.get_info();
            eprintln!("wgpu adapter: {} ({:?})", info.name, info.device_type);
            Ok(device)
        })
        .clone()
        .unwrap_or_else(|reason| {
            panic!("{reason}. The wgpu tests need a Vulkan driver: install mesa-vulkan-drivers")
        })
        .autodiff()
}

/// One PyTorch golden case (`tests/data/golden` of the repository; see its README).
#[derive(Deserialize)]
pub struct GoldenCase {
    pub name: String,
    pub mode: String,
    pub align_corners: Option<bool>,
    pub dtype: String,
    pub input_shape: [usize; 4],
    pub output_shape: [usize; 4],
    pub x: Vec<f64>,
    pub g: Vec<f64>,
    pub y: Vec<f64>,
    pub dx: Vec<f64>,
}

#[derive(Deserialize)]
struct Index {
    cases: Vec<IndexEntry>,
}

#[derive(Deserialize)]
struct IndexEntry {
    file: String,
}

/// Every golden case, read from the repository's test data.
pub fn golden_cases() -> Vec<GoldenCase> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden");
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("golden {file}: {e}"))
    };
    let index: Index = serde_json::from_str(&read("index.json")).expect("golden index parses");
    index
        .cases
        .iter()
        .map(|entry| serde_json::from_str(&read(&entry.file)).expect("golden case parses"))
        .collect()
}

impl GoldenCase {
    pub fn options(&self) -> InterpolateOptions {
        let mode = match self.mode.as_str() {
            "nearest" => InterpolateMode::Nearest,
            "bilinear" => InterpolateMode::Bilinear,
            "bicubic" => InterpolateMode::Bicubic,
            other => panic!("unknown golden mode {other}"),
        };
        let [_, _, p, q] = self.output_shape;
        InterpolateOptions::new(mode)
            .with_align_corners(self.align_corners.unwrap_or(false))
            .with_output_size([p, q])
    }

    pub fn dtype(&self) -> DType {
        match self.dtype.as_str() {
            "float32" => DType::F32,
            "float64" => DType::F64,
            other => panic!("unknown golden dtype {other}"),
        }
    }

    /// `(y, dx)` through `resize` on `device` (an autodiff device), in the case's dtype.
    pub fn run(
        &self,
        device: &Device,
        resize: impl Fn(Tensor<4>, InterpolateOptions) -> Tensor<4>,
    ) -> (Vec<f64>, Vec<f64>) {
        let x = tensor(&self.x, self.input_shape, self.dtype(), device).require_grad();
        let g = tensor(&self.g, self.output_shape, self.dtype(), device);
        let y = resize(x.clone(), self.options());
        assert_eq!(y.dtype(), self.dtype(), "{}: dtype kept", self.name);
        let gradients = (y.clone() * g).sum().backward();
        let dx = x.grad(&gradients).expect("x has a gradient");
        (values(y), values(dx))
    }
}

pub fn tensor(values: &[f64], shape: [usize; 4], dtype: DType, device: &Device) -> Tensor<4> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), (device, dtype))
}

pub fn values<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data_dtype(DType::F64)
        .try_to_vec::<f64>()
        .expect("f64 values")
}

/// `max |a − b| / (1 + |b|)`.
pub fn max_scaled_error(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max)
}

/// A tensor's exact bits, as a SHA-256 hex digest of its little-endian bytes.
pub fn bits_hash<const D: usize>(tensors: impl IntoIterator<Item = Tensor<D>>) -> String {
    let mut hasher = Sha256::new();
    for t in tensors {
        hasher.update(t.into_data().as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Deterministic uniform values in [-1, 1) (a small LCG: no RNG state shared between tests).
pub fn uniform(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The environment variable naming the case a helper test runs in a child process.
pub const CASE_ENV: &str = "BDT_CHILD_CASE";

/// The case this process was started for, if it is a child.
pub fn child_case() -> Option<String> {
    std::env::var(CASE_ENV).ok()
}

/// Runs the ignored test `helper` of this test binary for `case` in a new process and returns
/// its stdout. Panics with the child's output when it fails.
pub fn run_child(helper: &str, case: &str) -> String {
    let (succeeded, stdout, stderr) = child_output(helper, case);
    assert!(succeeded, "child {case} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Every value a child printed as `KEY=value` (libtest may print text before it on the line).
pub fn values_of(stdout: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key}=");
    let values: Vec<String> = stdout
        .lines()
        .filter_map(|line| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&prefix))
        })
        .map(str::to_string)
        .collect();
    assert!(!values.is_empty(), "the child printed no {key}=:\n{stdout}");
    values
}

/// Runs the ignored test `helper` for `case` in a new process: whether it succeeded, and its
/// stdout and stderr.
pub fn child_output(helper: &str, case: &str) -> (bool, String, String) {
    child_output_with(helper, case, &[])
}

/// [`child_output`] with more environment variables for the child.
pub fn child_output_with(helper: &str, case: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            helper,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE_ENV, case)
        // A fresh autotune cache: the child tunes every kernel itself instead of reading the
        // choices an earlier process persisted under target/ (Burn's default features).
        .env("CUBECL_AUTOTUNE_CACHE", "0")
        .envs(env.iter().copied())
        .output()
        .expect("child test process starts");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// How many golden cases the repository's test data holds (half f32, half f64).
pub const GOLDEN_CASES: usize = 190;

/// Every selected golden case through `resize` on `device`, forward and gradient; returns how
/// many ran. Error `|a − b| / (1 + |b|)`: f32 forward ≤ 1e-5, gradient ≤ 5e-5; f64 ≤ 1e-11.
pub fn check_golden(
    device: &Device,
    resize: fn(Tensor<4>, InterpolateOptions) -> Tensor<4>,
    selected: impl Fn(&GoldenCase) -> bool,
) -> usize {
    let cases = golden_cases();
    assert_eq!(cases.len(), GOLDEN_CASES, "golden set incomplete");
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases.iter().filter(|c| selected(c)) {
        let (y, dx) = case.run(device, resize);
        let (err_y, err_dx) = (
            max_scaled_error(&y, &case.y),
            max_scaled_error(&dx, &case.dx),
        );
        let (tol_y, tol_dx) = match case.dtype() {
            DType::F64 => (1e-11, 1e-11),
            _ => (1e-5, 5e-5),
        };
        if !(err_y <= tol_y && err_dx <= tol_dx) {
            failures.push(format!("{}: y err {err_y:e}, dx err {err_dx:e}", case.name));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "golden failures:\n{}",
        failures.join("\n")
    );
    checked
}

/// Every mode flex 0.22.1 has a forward kernel for (nearest-exact: wgpu only).
pub const FLEX_MODES: [InterpolateMode; 4] = [
    InterpolateMode::Nearest,
    InterpolateMode::Bilinear,
    InterpolateMode::Bicubic,
    InterpolateMode::Lanczos3,
];

/// `[h, w] → [p, q]`: up, down, mixed per axis, size-one axes, identity.
pub const SIZES: [([usize; 2], [usize; 2]); 6] = [
    ([5, 7], [11, 4]),
    ([16, 16], [37, 64]),
    ([37, 29], [8, 13]),
    ([1, 5], [4, 1]),
    ([9, 1], [1, 9]),
    ([6, 6], [6, 6]),
];
