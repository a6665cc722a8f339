//! CubeCL autotune never costs determinism silently: in a build with Burn's `autotune` feature
//! (the `wgpu-default-features` feature of this suite: fusion + autotune, what `burn` with its
//! default features gives), the decorator announces it once per process on stderr, refuses to
//! run under `strict`, and `check` reports it; in a build without it, none of that happens. The
//! expectation comes from the cargo feature the test was built with, not from the detection
//! under test.
#![cfg(feature = "wgpu")]

use burn::backend::Wgpu;
use burn::tensor::Tensor;
use burn_deterministic::determinism::{check, use_autotune_cache_dir, PinCacheError};
use burn_deterministic::{DeterministicBackend, DeterministicConfig};
use burn_deterministic_suite::harness::configured;
use burn_deterministic_suite::processes::{
    fresh_dir, pin_autotune_cache_from_env, run_child, run_child_unchecked, Child,
    AUTOTUNE_CACHE_ENV, AUTOTUNE_NOTICE, CASE_ENV,
};
use burn_deterministic_testkit::walk;

type Det<B> = DeterministicBackend<B>;

const AUTOTUNE_BUILD: bool = cfg!(feature = "wgpu-default-features");

fn vulkan() -> burn::backend::wgpu::WgpuDevice {
    burn_deterministic_suite::wgpu_setup::test_device()
}

#[test]
#[ignore = "run as a child process by the autotune tests"]
fn child_case() {
    pin_autotune_cache_from_env();
    let case = std::env::var(CASE_ENV).expect("run by the parent tests");
    let device = vulkan();
    let work = || {
        let a = Tensor::<Det<Wgpu>, 2>::ones([64, 48], &device);
        let b = Tensor::<Det<Wgpu>, 2>::ones([48, 32], &device);
        a.matmul(b).sum().into_scalar()
    };
    match case.as_str() {
        "use" => println!("RESULT={}", work()),
        "fingerprint" => {
            // One training-like step through the decorator: resize forward and backward and a
            // full sum, on shapes that autotune tunes (matmuls, reductions).
            use burn::tensor::module::interpolate;
            use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
            type Train = burn::backend::Autodiff<Det<Wgpu>>;
            let x = Tensor::<Train, 4>::from_data(
                burn::tensor::TensorData::new(uniform(1, 2 * 3 * 24 * 32), [2, 3, 24, 32]),
                &device,
            )
            .require_grad();
            let options = InterpolateOptions::new(InterpolateMode::Bilinear);
            let y = interpolate(x.clone(), [61, 45], options);
            let loss = (y.clone() * y).sum();
            let grad = x.grad(&loss.backward()).unwrap();
            let mut bytes = loss.into_data().as_bytes().to_vec();
            bytes.extend_from_slice(grad.into_data().as_bytes());
            println!(
                "FINGERPRINT={}",
                burn_deterministic_suite::metrics::sha256_hex(&bytes)
            );
        }
        "strict" => {
            let strict = DeterministicConfig::default().with_strict(true);
            println!("RESULT={}", configured(strict, work));
        }
        other => panic!("unknown case {other}"),
    }
}

fn uniform(seed: u64, n: usize) -> Vec<f32> {
    burn_deterministic_suite::harness::uniform(seed, n)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Three processes, each with a new empty autotune cache: the decorator's results agree, or
/// (only possible in an autotune build) every process announced why they may not. The
/// distinct count is printed: the measurement of what fresh caches do.
#[test]
fn fresh_autotune_caches_never_drift_silently() {
    let children: Vec<_> = (0..3)
        .map(|_| run_child("child_case", "fingerprint", &[]))
        .collect();
    let hashes: std::collections::BTreeSet<String> =
        children.iter().map(|c| c.value("FINGERPRINT")).collect();
    let announced = children.iter().all(Child::announced_autotune);
    eprintln!(
        "3 fresh-cache processes: {} distinct result(s); announced: {announced}",
        hashes.len()
    );
    assert!(hashes.len() == 1 || announced, "silent drift: {hashes:?}");
    assert_eq!(announced, AUTOTUNE_BUILD);
}

#[test]
fn check_reports_autotune_exactly_in_autotune_builds() {
    let report = check::<Wgpu>(&vulkan());
    assert_eq!(report.is_err(), AUTOTUNE_BUILD, "{report:?}");
    if let Err(hazard) = report {
        let message = hazard.to_string();
        assert!(message.contains(AUTOTUNE_NOTICE), "{message}");
        assert!(message.contains("default-features = false"), "{message}");
    }
}

/// The determinism report marks the wgpu device autotuned, and names it as a hazard, exactly in
/// autotune builds.
#[test]
fn the_report_names_autotune_exactly_in_autotune_builds() {
    let device = vulkan();
    // A full sum: rewritten on CubeCL, so the device appears in the report.
    let x = Tensor::<Det<Wgpu>, 1>::ones([5000], &device);
    assert_eq!(x.sum().into_scalar(), 5000.0);
    let report = burn_deterministic::report::report();
    let wgpu = report
        .devices
        .iter()
        .find(|d| d.backend.contains("wgpu"))
        .unwrap_or_else(|| panic!("no wgpu device in\n{report}"));
    assert_eq!(wgpu.autotuned, AUTOTUNE_BUILD, "{report}");
    let named = report.hazards().iter().any(|h| h.contains("autotune"));
    assert_eq!(named, AUTOTUNE_BUILD, "{report}");
}

#[test]
fn the_notice_is_printed_once_per_process_in_autotune_builds() {
    let child = run_child("child_case", "use", &[]);
    assert_eq!(child.value("RESULT"), "98304");
    let notices = child.stderr.matches(AUTOTUNE_NOTICE).count();
    assert_eq!(
        notices,
        usize::from(AUTOTUNE_BUILD),
        "stderr:\n{}",
        child.stderr
    );
}

#[test]
fn strict_refuses_an_autotuned_device() {
    let (succeeded, child) = run_child_unchecked("child_case", "strict", &[]);
    assert_eq!(succeeded, !AUTOTUNE_BUILD, "stderr:\n{}", child.stderr);
    if AUTOTUNE_BUILD {
        assert!(child.announced_autotune(), "stderr:\n{}", child.stderr);
        assert!(child.values("RESULT").is_empty());
    }
}

/// The pinned directory receives CubeCL's tuning results in an autotune build (so runs that
/// share it pick the same kernels), and stays empty without autotune.
#[test]
fn a_pinned_cache_directory_receives_the_tuning_results() {
    let dir = fresh_dir("pinned-cache");
    let child = run_child(
        "child_case",
        "use",
        &[(AUTOTUNE_CACHE_ENV, dir.to_str().unwrap())],
    );
    assert_eq!(child.value("RESULT"), "98304");
    let files = walk(&dir);
    assert_eq!(
        !files.is_empty(),
        AUTOTUNE_BUILD,
        "files in the pinned cache: {files:?}"
    );
}

/// CubeCL's configuration cannot change once a device used it: pinning then is an error, not
/// a silent no-op.
#[test]
fn pinning_after_first_use_is_refused() {
    let _ = Tensor::<Det<Wgpu>, 1>::ones([4], &vulkan()).into_data();
    assert_eq!(
        use_autotune_cache_dir(fresh_dir("late-pin").to_path_buf()),
        Err(PinCacheError::AlreadyConfigured)
    );
}
