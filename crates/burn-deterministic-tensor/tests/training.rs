//! Training through a bilinear, bicubic or lanczos3 upsample on Burn 0.22.1's wgpu backend
//! (Vulkan; llvmpipe without a GPU), where Burn's own backward panics, and the product's
//! promise there: the same parameters, bit for bit, from separate processes.
//!
//! Controls: Burn's own `interpolate` in the same training panics (so the test exercises what
//! this crate adds); that plain ops ending in float atomics (a deformable convolution's input
//! gradient, a gather's backward) give different bits across processes on the same backend and
//! build, so that the comparison can see drift where there is some, is shown next to their
//! fixed-order replacements in `tests/indexing.rs`. Every child process starts with an empty
//! autotune cache.

mod common;

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_tensor::fixed_order;
use common::{
    bits_hash, child_case, child_output, max_scaled_error, run_child, tensor, uniform, values,
    values_of,
};

const MODES: [(&str, InterpolateMode); 3] = [
    ("bilinear", InterpolateMode::Bilinear),
    ("bicubic", InterpolateMode::Bicubic),
    ("lanczos3", InterpolateMode::Lanczos3),
];
const STEPS: usize = 12;
const HELPER: &str = "child_process_helper";

type Resize = fn(Tensor<4>, InterpolateOptions) -> Tensor<4>;

/// How [`train`] fits its head: the resize and its mode, the output side, the loss's reduction,
/// what is done to each gradient before the step, and the learning rate.
struct Recipe {
    resize: Resize,
    mode: InterpolateMode,
    size: usize,
    reduce: fn(Tensor<4>) -> Tensor<1>,
    clip: fn(Tensor<4>) -> Tensor<4>,
    lr: f64,
}

impl Recipe {
    /// A mean squared error through `resize`, to 32 × 32, plain SGD.
    fn mean_loss(mode: InterpolateMode, resize: Resize) -> Self {
        Self {
            resize,
            mode,
            size: 32,
            reduce: |t| t.mean(),
            clip: |g| g,
            lr: 0.5,
        }
    }

    /// A full-sum loss and each gradient clipped by norm, both with the crate's fixed-order
    /// functions (Burn's `sum()` and `GradientClipping::Norm` meet their partial sums in float
    /// atomics on CubeCL), through this crate's bilinear resize to 512 × 512: large enough
    /// for a many-workgroup sum.
    fn fixed_order_sum_loss() -> Self {
        Self {
            resize: burn_deterministic_tensor::interpolate,
            mode: InterpolateMode::Bilinear,
            size: 512,
            reduce: fixed_order::sum,
            clip: |g| fixed_order::clip_by_norm(g, 1.0),
            lr: 0.05,
        }
    }
}

/// A segmentation-style head: learned low-resolution features `[2, 4, 8, 8]`, a 1×1 channel mix
/// `[4 → 3]` (a matmul) and a resize to `[size, size]`, fitted to a fixed target by SGD as
/// `recipe` says. Returns the hash of the final parameters' bits and the losses of every step.
fn train(device: &Device, recipe: Recipe) -> (String, Vec<f64>) {
    let mut features = tensor(&uniform(1, 2 * 4 * 8 * 8), [2, 4, 8, 8], DType::F32, device);
    let mut mix = Tensor::<4>::from_data(
        burn::tensor::TensorData::new(uniform(2, 4 * 3), [1, 1, 4, 3]),
        (device, DType::F32),
    );
    let size = recipe.size;
    let target = tensor(
        &uniform(3, 2 * 3 * size * size),
        [2, 3, size, size],
        DType::F32,
        device,
    );
    let options = InterpolateOptions::new(recipe.mode)
        .with_align_corners(false)
        .with_output_size([size, size]);
    let mut losses = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let (f, m) = (features.clone().require_grad(), mix.clone().require_grad());
        // [2, 4, 8, 8] → [2, 8, 8, 4] · [4, 3] → [2, 3, 8, 8]
        let mixed = f
            .clone()
            .permute([0, 2, 3, 1])
            .matmul(m.clone())
            .permute([0, 3, 1, 2]);
        let y = (recipe.resize)(mixed, options.clone());
        let loss = (recipe.reduce)((y - target.clone()).powi_scalar(2));
        let gradients = loss.backward();
        losses.push(values(loss)[0]);
        let step = |p: &Tensor<4>, what| {
            let grad = (recipe.clip)(p.grad(&gradients).expect(what));
            (p.clone().inner() - grad * recipe.lr).autodiff()
        };
        features = step(&f, "features grad");
        mix = step(&m, "mix grad");
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
    if let Some(kind) = what.strip_prefix("sum-") {
        // A full sum of 4 Mi floats, 6 times: Burn's, or the fixed-order one.
        let x = tensor(
            &uniform(21, 1 << 22),
            [1, 1, 1 << 11, 1 << 11],
            DType::F32,
            &device,
        );
        for _ in 0..6 {
            let sum = match kind {
                "burn" => x.clone().sum(),
                _ => fixed_order::sum(x.clone()),
            };
            println!("SUM={}", bits_hash([sum]));
        }
        return;
    }
    if what == "train-sum-loss" {
        let (hash, losses) = train(&device, Recipe::fixed_order_sum_loss());
        println!("HASH={hash}");
        println!(
            "LOSSES={}",
            losses
                .iter()
                .map(|l| format!("{l:e}"))
                .collect::<Vec<_>>()
                .join(",")
        );
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
            let layout = burn_deterministic_tensor::DeterministicConfig::default()
                .with_layout(burn_deterministic_tensor::WeightLayout::Banded)
                .with_block_size(3);
            burn_deterministic_tensor::with_config(layout, || {
                burn_deterministic_tensor::extension::try_interpolate(x, options)
            })
            .expect("a valid configuration")
            .expect("a valid resize")
        },
        other => panic!("unknown kind {other}"),
    };
    let (hash, losses) = train(&device, Recipe::mean_loss(mode, resize));
    println!("HASH={hash}");
    println!("FIRST_LOSS={}", losses[0]);
    println!("LAST_LOSS={}", losses[STEPS - 1]);
}

/// The fixed-order functions against Burn's own ops on `device`: exact on small integers
/// (every order of addition gives the exact sum), within f32 rounding of Burn's sum, mean and
/// norm on uniform values, and `clip_by_norm` as Burn's `GradientClipping::Norm`.
fn fixed_order_functions_match_burns(device: &Device) {
    for n in [1, 7, 4096, 4097, 3 * 4096, 1_000_003] {
        let integers: Vec<f64> = (0..n).map(|i| (i % 7) as f64 - 3.0).collect();
        let exact: f64 = integers.iter().sum();
        let x = tensor(&integers, [1, 1, 1, n], DType::F32, device);
        assert_eq!(values(fixed_order::sum(x.clone())), [exact], "n = {n}");
        let x = tensor(&uniform(n as u64, n), [1, 1, 1, n], DType::F32, device);
        let close = |ours: Tensor<1>, burns: Tensor<1>, what: &str| {
            let (ours, burns) = (values(ours)[0], values(burns)[0]);
            let scale = values(x.clone().abs().sum())[0].max(1.0);
            assert!(
                (ours - burns).abs() <= 1e-5 * scale,
                "{what}, n = {n}: {ours} vs {burns}"
            );
        };
        close(fixed_order::sum(x.clone()), x.clone().sum(), "sum");
        close(fixed_order::mean(x.clone()), x.clone().mean(), "mean");
        close(
            fixed_order::l2_norm(x.clone()),
            x.clone().square().sum().sqrt(),
            "norm",
        );
        for threshold in [0.5, 1e6] {
            let ours = values(fixed_order::clip_by_norm(x.clone(), threshold));
            let burns = values(
                burn::optim::grad_clipping::GradientClipping::Norm(threshold)
                    .clip_gradient(x.clone()),
            );
            assert!(
                max_scaled_error(&ours, &burns) <= 1e-5,
                "clip {threshold}, n = {n}"
            );
        }
    }
}

/// How many distinct values of `key` the child `case` prints over 5 new processes, which must
/// print `expected` values in all.
fn distinct_across_processes(case: &str, key: &str, expected: usize) -> usize {
    let mut seen: Vec<String> = (0..5)
        .flat_map(|_| values_of(&run_child(HELPER, case), key))
        .collect();
    assert_eq!(seen.len(), expected, "{case}: values printed");
    seen.sort();
    seen.dedup();
    seen.len()
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

    #[test]
    fn fixed_order_functions_match_burns_on_wgpu() {
        fixed_order_functions_match_burns(&common::vulkan());
    }

    /// Burn's full `sum()` of 4 Mi floats gives more than one result across 5 processes × 6
    /// repeats (its partial sums meet in float atomics), the crate's fixed-order sum one.
    #[test]
    fn burn_sum_drifts_and_the_fixed_order_sum_does_not() {
        let distinct =
            |kind: &str| distinct_across_processes(&format!("wgpu/sum-{kind}"), "SUM", 30);
        let (burn, fixed) = (distinct("burn"), distinct("fixed"));
        eprintln!("distinct sums in 30: Burn's {burn}, fixed-order {fixed}");
        assert!(
            burn > 1,
            "Burn's sum did not drift: the control cannot fail"
        );
        assert_eq!(fixed, 1);
    }

    /// A training whose loss is a full sum and whose gradients are clipped by norm, both with
    /// the crate's fixed-order functions: one loss sequence and one parameter hash in 5
    /// processes. (Its control is the test above: Burn's own sum drifting on this backend.)
    #[test]
    fn a_sum_loss_training_with_fixed_order_functions_is_reproducible() {
        let runs: Vec<(String, String)> = (0..5)
            .map(|_| {
                let stdout = run_child(HELPER, "wgpu/train-sum-loss");
                (
                    values_of(&stdout, "HASH")[0].clone(),
                    values_of(&stdout, "LOSSES")[0].clone(),
                )
            })
            .collect();
        let losses: Vec<f64> = runs[0]
            .1
            .split(',')
            .map(|l| l.parse().expect("a loss"))
            .collect();
        assert!(
            losses[STEPS - 1] < 0.9 * losses[0],
            "the loss did not fall: {losses:?}"
        );
        for run in &runs[1..] {
            assert_eq!(run, &runs[0], "5 processes trained differently");
        }
    }
}

mod flex {
    use super::*;

    #[test]
    fn fixed_order_functions_match_burns_on_flex() {
        fixed_order_functions_match_burns(&common::flex());
    }

    #[test]
    fn burn_own_backward_panics_for_lanczos3() {
        assert_burn_backward_panics("flex", "lanczos3");
    }

    #[test]
    fn lanczos3_training_is_bit_reproducible_across_processes() {
        assert_trains_reproducibly("flex", "lanczos3");
    }

    /// `NormClipped` around Burn's SGD steps as SGD configured with
    /// `GradientClipping::Norm` does (within f32 rounding: the norms add in another order), and
    /// the clipping acts (an unclipped step lands elsewhere).
    #[test]
    #[cfg(feature = "optim")]
    fn norm_clipped_steps_like_burns_norm_clipping() {
        use burn::nn::{Linear, LinearConfig};
        use burn::optim::grad_clipping::GradientClippingConfig;
        use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
        use burn_deterministic_tensor::fixed_order::NormClipped;

        let device = common::flex();
        let linear: Linear = LinearConfig::new(64, 32).init(&device);
        let input =
            tensor(&uniform(50, 8 * 64), [1, 1, 8, 64], DType::F32, &device).reshape([8, 64]);
        let gradients = |model: &Linear| {
            let loss = model.forward(input.clone()).square().mean();
            GradientsParams::from_grads(loss.backward(), model)
        };
        let step = |mut optimizer: ModuleOptimizer| {
            let stepped = optimizer.step(0.5, linear.clone(), gradients(&linear));
            values(stepped.weight.val())
        };
        let ours = step(NormClipped::new(SgdConfig::new().build(), 0.01).into());
        let burns = step(
            SgdConfig::new()
                .with_gradient_clipping(Some(GradientClippingConfig::Norm(0.01)))
                .init(),
        );
        let unclipped = step(SgdConfig::new().init());
        assert!(
            max_scaled_error(&ours, &burns) <= 1e-6,
            "NormClipped differs from Burn's"
        );
        assert!(
            max_scaled_error(&ours, &unclipped) > 1e-4,
            "the threshold did not clip: the comparison cannot fail"
        );
    }
}
