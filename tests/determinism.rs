//! Determinism is the product promise: forward + backward through the decorator, run twice in
//! this process and once in each of three child processes, gives the same bits, on every
//! backend the tests can reach. Each child starts with an empty CubeCL autotune cache, so a
//! build with Burn's `autotune` feature cannot agree by reading one cache: there, children that
//! differ must each have printed the decorator's autotune notice (never a silent drift).
//!
//! The negative controls (the plain ops drifting where they drift) are in
//! `determinism_contract.rs`; resize itself has no plain counterpart to drift: the native
//! backward panics on these backends.

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic_suite::harness::{uniform, Resize};
use burn_deterministic_suite::metrics::sha256_hex;
use burn_deterministic_suite::processes::{pin_autotune_cache_from_env, run_child, CASE_ENV};

/// SHA-256 over the bits of `y` and `dx` for several modes, sizes and batch layouts.
fn fingerprint<B: AutodiffBackend>(device: &B::Device) -> String {
    let problems = [
        ([2, 3, 24, 32], [61, 45], InterpolateMode::Bilinear, false),
        ([2, 3, 24, 32], [61, 45], InterpolateMode::Bilinear, true),
        ([1, 4, 40, 30], [17, 64], InterpolateMode::Bicubic, false),
        ([3, 2, 16, 16], [48, 48], InterpolateMode::Lanczos3, true),
        ([4, 19, 16, 16], [64, 64], InterpolateMode::Bilinear, false),
    ];
    let mut bytes = Vec::new();
    for (i, (shape, output_size, mode, align_corners)) in problems.into_iter().enumerate() {
        let x = uniform(300 + i as u64, shape.iter().product());
        let problem = Resize {
            x: &x,
            shape,
            output_size,
            options: InterpolateOptions::new(mode).with_align_corners(align_corners),
            dtype: DType::F32,
        };
        let g = uniform(400 + i as u64, problem.output_shape().iter().product());
        let (y, dx) = problem.forward_backward_data::<B>(&g, device);
        bytes.extend_from_slice(y.as_bytes());
        bytes.extend_from_slice(dx.as_bytes());
    }
    sha256_hex(&bytes)
}

fn fingerprint_of(backend: &str) -> String {
    match backend {
        #[cfg(feature = "ndarray")]
        "ndarray" => {
            use burn::backend::ndarray::{NdArray, NdArrayDevice};
            type Train = burn::backend::Autodiff<burn_deterministic::DeterministicBackend<NdArray>>;
            fingerprint::<Train>(&NdArrayDevice::Cpu)
        }
        #[cfg(feature = "flex")]
        "flex" => {
            use burn::backend::flex::{Flex, FlexDevice};
            type Train = burn::backend::Autodiff<burn_deterministic::DeterministicBackend<Flex>>;
            fingerprint::<Train>(&FlexDevice)
        }
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            use burn::backend::Wgpu;
            type Train = burn::backend::Autodiff<burn_deterministic::DeterministicBackend<Wgpu>>;
            let device = burn_deterministic_suite::wgpu_setup::test_device();
            fingerprint::<Train>(&device)
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            use burn::backend::Cuda;
            type Train = burn::backend::Autodiff<burn_deterministic::DeterministicBackend<Cuda>>;
            fingerprint::<Train>(&Default::default())
        }
        other => panic!("backend {other} is not enabled in this build"),
    }
}

/// Helper run by the parent tests in a fresh process; ignored in normal runs.
#[test]
#[ignore = "run as a child process by the determinism tests"]
fn child_prints_fingerprint() {
    pin_autotune_cache_from_env();
    let backend = std::env::var(CASE_ENV).expect("run by the determinism tests");
    let hash = fingerprint_of(&backend);
    println!("\nFINGERPRINT={hash}");
}

fn twice_and_in_three_processes(backend: &str) {
    let first = fingerprint_of(backend);
    let second = fingerprint_of(backend);
    assert_eq!(first, second, "{backend}: two runs in one process differ");
    let children: Vec<_> = (0..3)
        .map(|_| run_child("child_prints_fingerprint", backend, &[]))
        .collect();
    let hashes: Vec<String> = children.iter().map(|c| c.value("FINGERPRINT")).collect();
    if hashes.iter().all(|h| *h == hashes[0]) {
        eprintln!(
            "{backend}: 2 runs here, 3 new processes: fingerprint {}",
            hashes[0]
        );
        return;
    }
    for (child, hash) in children.iter().zip(&hashes) {
        assert!(
            child.announced_autotune(),
            "{backend}: processes differ ({hashes:?}) and the one with {hash} printed no \
             autotune notice: a silent drift.\nstderr:\n{}",
            child.stderr
        );
    }
    eprintln!("{backend}: fresh autotune caches gave {hashes:?}, each process announced it");
}

#[cfg(feature = "ndarray")]
#[test]
fn ndarray_forward_backward_is_bit_reproducible() {
    twice_and_in_three_processes("ndarray");
}

#[cfg(feature = "flex")]
#[test]
fn flex_forward_backward_is_bit_reproducible() {
    twice_and_in_three_processes("flex");
}

#[cfg(feature = "wgpu")]
#[test]
fn wgpu_forward_backward_is_bit_reproducible() {
    twice_and_in_three_processes("wgpu");
}

/// Run by `scripts/gpu-bench.sh` on a machine with an NVIDIA GPU (compile-checked in CI).
#[cfg(feature = "cuda")]
#[test]
fn cuda_forward_backward_is_bit_reproducible() {
    twice_and_in_three_processes("cuda");
}
