//! What the tests of the Burn 0.22 front door share: the devices, the golden vectors, bits and
//! hashes, and helper tests run in new processes.
#![allow(dead_code, unused_imports)] // each test binary uses a part

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::{DType, Device, Tensor, TensorData};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// Flex (pure-Rust CPU), with autodiff.
pub fn flex() -> Device {
    Device::flex().autodiff()
}

/// wgpu pinned to the Vulkan API (llvmpipe without a GPU: the OpenGL fallback computes wrong
/// numbers), with autodiff. Without an adapter the test **fails**: a wgpu test that cannot run
/// its check must not report success.
pub fn vulkan() -> Device {
    vulkan_without_autodiff().autodiff()
}

/// [`vulkan`] without autodiff (the benchmarks' forward-only baselines).
pub fn vulkan_without_autodiff() -> Device {
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
}

pub use burn_deterministic_testkit::golden::{
    load_cases as golden_cases, max_scaled_error, GoldenCase, CASES as GOLDEN_CASES,
};

/// A golden case in Burn 0.22's terms.
pub trait BurnCase {
    fn options(&self) -> InterpolateOptions;
    fn dtype(&self) -> DType;
    fn run(
        &self,
        device: &Device,
        resize: impl Fn(Tensor<4>, InterpolateOptions) -> Tensor<4>,
    ) -> (Vec<f64>, Vec<f64>);
}

impl BurnCase for GoldenCase {
    fn options(&self) -> InterpolateOptions {
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

    fn dtype(&self) -> DType {
        if self.is_f32() {
            DType::F32
        } else {
            DType::F64
        }
    }

    /// `(y, dx)` through `resize` on `device` (an autodiff device), in the case's dtype.
    fn run(
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

pub use burn_deterministic_testkit::child::case as child_case;

/// Runs the ignored test `helper` of this test binary for `case` in a new process and returns
/// its stdout. Panics with the child's output when it fails.
pub fn run_child(helper: &str, case: &str) -> String {
    let (succeeded, stdout, stderr) = child_output(helper, case);
    assert!(succeeded, "child {case} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Every value a child printed as `KEY=value`; panics when there is none.
pub fn values_of(stdout: &str, key: &str) -> Vec<String> {
    let values = burn_deterministic_testkit::child::values_in(stdout, key);
    assert!(!values.is_empty(), "the child printed no {key}=:\n{stdout}");
    values
}

/// Runs the ignored test `helper` for `case` in a new process: whether it succeeded, and its
/// stdout and stderr.
pub fn child_output(helper: &str, case: &str) -> (bool, String, String) {
    child_output_with(helper, case, &[])
}

/// [`child_output`] with more environment variables for the child. Every child starts with
/// a fresh autotune cache (the persistent one off) unless `env` says otherwise: it tunes every
/// kernel itself instead of reading the choices an earlier process persisted under target/.
pub fn child_output_with(helper: &str, case: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let fresh = [("CUBECL_AUTOTUNE_CACHE", "0")];
    let env: Vec<(&str, &str)> = fresh.iter().chain(env).copied().collect();
    let child = burn_deterministic_testkit::child::run(helper, case, &env);
    (child.succeeded, child.stdout, child.stderr)
}

/// Every selected golden case through `resize` on `device`, forward and gradient; returns how
/// many ran. Error `|a − b| / (1 + |b|)`: f32 forward ≤ 1e-5, gradient ≤ 5e-5; f64 ≤ 1e-11.
pub fn check_golden(
    device: &Device,
    resize: fn(Tensor<4>, InterpolateOptions) -> Tensor<4>,
    selected: impl Fn(&GoldenCase) -> bool,
) -> usize {
    let cases = golden_cases();
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

/// The benchmarks' criterion: 10 samples, 3 s of warm-up and 10 of measurement (1 and 3 with
/// `BENCH_QUICK` set), then the command line's options.
pub fn bench_criterion() -> criterion::Criterion {
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(if quick { 1 } else { 3 }))
        .measurement_time(std::time::Duration::from_secs(if quick { 3 } else { 10 }))
        .configure_from_args()
}

/// In a child process the other tests started: its device (`wgpu/…` on Vulkan, else flex) and
/// the rest of its case.
pub fn child_device_and_case() -> Option<(Device, String)> {
    let case = child_case()?;
    let (backend, kind) = case.split_once('/').expect("case is backend/kind");
    let device = match backend {
        "wgpu" => vulkan(),
        _ => flex(),
    };
    Some((device, kind.to_string()))
}

/// Criterion's median of benchmark `id` of `group` in this run, in seconds (the workspace's
/// `target/`, or `CARGO_TARGET_DIR`).
pub fn bench_median(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        });
    burn_deterministic_testkit::criterion_median(&target, group, id)
}

/// The signature of `burn::tensor::module::deform_conv2d` (and of the crate's replacement).
pub type DeformConv2d = fn(
    Tensor<4>,
    Tensor<4>,
    Tensor<4>,
    Option<Tensor<4>>,
    Option<Tensor<1>>,
    burn::tensor::ops::DeformConvOptions<2>,
) -> Tensor<4>;
