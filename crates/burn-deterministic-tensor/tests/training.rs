//! Training through a bilinear, bicubic or lanczos3 upsample on Burn 0.22.1's wgpu backend
//! (Vulkan; llvmpipe without a GPU), where Burn's own backward panics, and the product's
//! promise there: the same parameters, bit for bit, from separate processes.
//!
//! Controls: Burn's own `interpolate` in the same training panics (so the test exercises what
//! this crate adds), and a plain full `sum()` on the same backend gives different bits across
//! processes (so the two-process comparison can see drift where there is some).

mod common;

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use common::{bits_hash, child_case, child_output, run_child, tensor, uniform, values, values_of};

const MODES: [(&str, InterpolateMode); 3] = [
    ("bilinear", InterpolateMode::Bilinear),
    ("bicubic", InterpolateMode::Bicubic),
    ("lanczos3", InterpolateMode::Lanczos3),
];
const STEPS: usize = 12;
const HELPER: &str = "child_process_helper";

type Resize = fn(Tensor<4>, InterpolateOptions) -> Tensor<4>;

/// A segmentation-style head: learned low-resolution features `[2, 4, 8, 8]`, a 1×1 channel mix
/// `[4 → 3]` (a matmul) and a resize to `[32, 32]`, fitted to a fixed target by SGD.
/// Returns the hash of the final parameters' bits and the losses of every step.
fn train(device: &Device, mode: InterpolateMode, resize: Resize) -> (String, Vec<f64>) {
    let mut features = tensor(&uniform(1, 2 * 4 * 8 * 8), [2, 4, 8, 8], DType::F32, device);
    let mut mix = Tensor::<4>::from_data(
        burn::tensor::TensorData::new(uniform(2, 4 * 3), [1, 1, 4, 3]),
        (device, DType::F32),
    );
    let target = tensor(
        &uniform(3, 2 * 3 * 32 * 32),
        [2, 3, 32, 32],
        DType::F32,
        device,
    );
    let options = InterpolateOptions::new(mode)
        .with_align_corners(false)
        .with_output_size([32, 32]);
    let mut losses = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let (f, m) = (features.clone().require_grad(), mix.clone().require_grad());
        // [2, 4, 8, 8] → [2, 8, 8, 4] · [4, 3] → [2, 3, 8, 8]
        let mixed = f
            .clone()
            .permute([0, 2, 3, 1])
            .matmul(m.clone())
            .permute([0, 3, 1, 2]);
        let y = resize(mixed, options.clone());
        let loss = (y - target.clone()).powi_scalar(2).mean();
        let gradients = loss.backward();
        losses.push(values(loss)[0]);
        let lr = 0.5;
        features = (f.clone().inner() - f.grad(&gradients).expect("features grad") * lr).autodiff();
        mix = (m.clone().inner() - m.grad(&gradients).expect("mix grad") * lr).autodiff();
    }
    (bits_hash([features, mix]), losses)
}

/// The cases the tests below run in new processes.
#[test]
#[ignore = "run by the other tests in a child process"]
fn child_process_helper() {
    let Some(case) = child_case() else {
        return;
    };
    let (backend, what) = case.split_once('/').expect("case is backend/what");
    let device = match backend {
        "wgpu" => common::vulkan(),
        "flex" => common::flex(),
        other => panic!("unknown backend {other}"),
    };
    if what == "sum" {
        // 4 Mi uniform floats, summed six times: CubeCL's full sum ends in float atomics.
        let n = 4 << 20;
        let x = Tensor::<1>::from_data(
            burn::tensor::TensorData::new(uniform(99, n), [n]),
            (&device.clone().inner(), DType::F32),
        );
        for _ in 0..6 {
            println!("SUM={}", bits_hash([x.clone().sum()]));
        }
        return;
    }
    let (kind, mode) = what.split_once('-').expect("what is kind-mode");
    let mode = MODES
        .iter()
        .find(|(name, _)| *name == mode)
        .unwrap_or_else(|| panic!("unknown mode {mode}"))
        .1
        .clone();
    let resize: Resize = match kind {
        "det" => burn_deterministic_tensor::interpolate,
        "burn" => burn::tensor::module::interpolate,
        #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
        "ext" => burn_deterministic_tensor::extension::interpolate,
        #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
        "band" => |x, options| {
            let layout = burn_deterministic_tensor::extension::AdjointLayout::Banded {
                block_size: core::num::NonZeroUsize::new(3).expect("3 > 0"),
            };
            burn_deterministic_tensor::extension::try_interpolate_with(x, options, layout)
                .expect("a valid resize")
        },
        other => panic!("unknown kind {other}"),
    };
    let (hash, losses) = train(&device, mode, resize);
    println!("HASH={hash}");
    println!("FIRST_LOSS={}", losses[0]);
    println!("LAST_LOSS={}", losses[STEPS - 1]);
}

fn assert_trains_reproducibly(backend: &str, mode: &str) {
    assert_kind_trains_reproducibly(backend, "det", mode)
}

/// `kind`: `det` (mechanism (a)), `ext` (mechanism (b)) or `band` (mechanism (b), banded
/// adjoint).
fn assert_kind_trains_reproducibly(backend: &str, kind: &str, mode: &str) {
    let case = format!("{backend}/{kind}-{mode}");
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let stdout = run_child(HELPER, &case);
            let loss = |key| values_of(&stdout, key)[0].parse::<f64>().expect("a loss");
            (
                values_of(&stdout, "HASH")[0].clone(),
                loss("FIRST_LOSS"),
                loss("LAST_LOSS"),
            )
        })
        .collect();
    eprintln!("{case}: {runs:?}");
    let (hash, first, last) = &runs[0];
    assert!(
        last < &(0.9 * first),
        "{case}: the loss did not fall ({first} → {last})"
    );
    assert_eq!(
        hash, &runs[1].0,
        "{case}: two processes trained different parameters"
    );
}

fn assert_burn_backward_panics(backend: &str, mode: &str) {
    let case = format!("{backend}/burn-{mode}");
    let (succeeded, stdout, stderr) = child_output(HELPER, &case);
    assert!(
        !succeeded,
        "{case}: Burn's own backward ran (the control expects Burn 0.22.1's panic):\n{stdout}"
    );
    // Burn 0.22.1's messages: CubeCL "interpolate_backward kernel failed (...): Unsupported
    // interpolation mode: Bilinear interpolation backward is not supported by JIT backend",
    // flex "interpolate_backward: unsupported mode Lanczos3 / dtype F32".
    let flex_message = format!(
        "interpolate_backward: unsupported mode {}",
        capitalised(mode)
    );
    let cubecl_message = format!(
        "{} interpolation backward is not supported",
        capitalised(mode)
    );
    let missing = stderr.contains(&flex_message) || stderr.contains(&cubecl_message);
    assert!(
        missing,
        "{case}: the child failed for another reason than Burn's missing backward:\n{stderr}"
    );
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

mod wgpu {
    use super::*;

    #[test]
    fn burn_own_backward_panics_for_every_mode() {
        for (mode, _) in MODES {
            assert_burn_backward_panics("wgpu", mode);
        }
    }

    #[test]
    fn bilinear_training_is_bit_reproducible_across_processes() {
        assert_trains_reproducibly("wgpu", "bilinear");
    }

    #[test]
    fn bicubic_training_is_bit_reproducible_across_processes() {
        assert_trains_reproducibly("wgpu", "bicubic");
    }

    #[test]
    fn lanczos3_training_is_bit_reproducible_across_processes() {
        assert_trains_reproducibly("wgpu", "lanczos3");
    }

    /// Mechanism (b) (Burn's forward kernel, the handwritten adjoint backward), every mode.
    #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
    #[test]
    fn extension_training_is_bit_reproducible_across_processes() {
        for (mode, _) in MODES {
            assert_kind_trains_reproducibly("wgpu", "ext", mode);
        }
    }

    /// Mechanism (b) with the banded adjoint (blocks of 3 outputs: several blocks per axis).
    #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
    #[test]
    fn banded_extension_training_is_bit_reproducible_across_processes() {
        for (mode, _) in MODES {
            assert_kind_trains_reproducibly("wgpu", "band", mode);
        }
    }

    /// The negative control of the comparisons above: on the same backend, a plain full sum
    /// gives different bits across 5 processes × 6 repeats.
    #[test]
    fn plain_full_sum_drifts_across_processes() {
        let mut seen: Vec<String> = (0..5)
            .flat_map(|_| values_of(&run_child(HELPER, "wgpu/sum"), "SUM"))
            .collect();
        assert_eq!(seen.len(), 30);
        seen.sort();
        seen.dedup();
        eprintln!("plain wgpu sum: {} distinct value(s) in 30", seen.len());
        assert!(
            seen.len() > 1,
            "the plain sum did not drift: the two-process comparison is not shown able to fail"
        );
    }
}

mod flex {
    use super::*;

    #[test]
    fn burn_own_backward_panics_for_lanczos3() {
        assert_burn_backward_panics("flex", "lanczos3");
    }

    #[test]
    fn lanczos3_training_is_bit_reproducible_across_processes() {
        assert_trains_reproducibly("flex", "lanczos3");
    }
}
