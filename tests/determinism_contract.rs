//! The determinism contract beyond resize: the ops of a training step whose native kernel adds
//! in a varying order are rewritten on exactly the devices where it does, with the same
//! numerics; and every determinism claim comes with a negative control, run in separate
//! processes, that shows the plain backend drifting where it drifts.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, ElementConversion, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_deterministic::determinism::fixed_order_sum;
use burn_deterministic::{DeterministicBackend, DeterministicConfig};
use burn_deterministic_suite::controls::deform_conv_grads;
use burn_deterministic_suite::harness::{configured, tensor, uniform};
use burn_deterministic_suite::metrics::sha256_hex;
use burn_deterministic_suite::processes::{pin_autotune_cache_from_env, run_child, CASE_ENV};
use std::collections::BTreeSet;

type Det<B> = DeterministicBackend<B>;

const PROCESSES: usize = 5;

fn switched_off() -> DeterministicConfig {
    DeterministicConfig::default().with_fixed_order_ops(false)
}

fn bits<B: Backend, const D: usize, K: burn::tensor::BasicOps<B>>(t: Tensor<B, D, K>) -> String {
    sha256_hex(t.into_data().as_bytes())
}

/// `fixed_order_sum` called directly, whatever the device's hazards.
fn tree_sum<B: Backend>(t: Tensor<B, 1>) -> Tensor<B, 1> {
    fixed_order_sum(t)
}

/// Element counts around the tree's row length (4096) and with a ragged tail at two levels.
const SIZES: [usize; 7] = [1, 7, 4096, 4097, 3 * 4096, 1_000_003, (5 << 20) + 17];

/// Small integers: every order of addition gives the exact sum, so the tree must too (a lost
/// or doubled element shows), and so must `B`'s own sum.
fn fixed_order_sum_is_exact_on_integers<B: Backend>(device: &B::Device) {
    for n in SIZES {
        let x: Vec<f64> = uniform(n as u64, n)
            .iter()
            .map(|v| (v * 8.0).round())
            .collect();
        let exact: f64 = x.iter().sum();
        let t: Tensor<B, 1> = tensor(&x, [n], DType::F32, device);
        let tree = tree_sum(t.clone()).into_scalar().elem::<f64>();
        let native = t.sum().into_scalar().elem::<f64>();
        assert_eq!(tree, exact, "tree sum of {n} integers");
        assert_eq!(native, exact, "native sum of {n} integers");
    }
}

/// Uniform floats: the tree's rounding stays within what f32 summation allows, next to `B`'s.
fn fixed_order_sum_matches_native<B: Backend>(device: &B::Device) {
    for n in SIZES {
        let x = uniform(1000 + n as u64, n);
        let exact: f64 = x.iter().map(|&v| v as f32 as f64).sum();
        let scale: f64 = x.iter().map(|v| v.abs()).sum::<f64>().max(1.0);
        let t: Tensor<B, 1> = tensor(&x, [n], DType::F32, device);
        let tree = tree_sum(t.clone()).into_scalar().elem::<f64>();
        let native = t.sum().into_scalar().elem::<f64>();
        // Each output of a level adds at most 4096 terms in sequence: error ≤ ~4096·ε·Σ|x| in
        // the worst case, far less in practice.
        let tolerance = 4096.0 * f32::EPSILON as f64 * scale;
        assert!(
            (tree - exact).abs() <= tolerance && (native - exact).abs() <= tolerance,
            "n = {n}: tree {tree}, native {native}, exact {exact}"
        );
    }
}

/// `scatter_nd` with many repeated targets: `Add` of ones counts the repeats exactly, `Assign`
/// keeps the last update. Returns the float and int results' bits.
fn scatter_nd_with_repeats<B: Backend>(device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 2, Int>) {
    let updates = 4000;
    let targets: Vec<i64> = (0..updates).map(|i| (i % 3) as i64).collect();
    let indices = Tensor::<B, 2, Int>::from_data(TensorData::new(targets, [updates, 1]), device);
    let ones = Tensor::<B, 2>::ones([updates, 5], device);
    let added = Tensor::<B, 2>::zeros([4, 5], device).scatter_nd(
        indices.clone(),
        ones,
        IndexingUpdateOp::Add,
    );
    let rows: Vec<i64> = (0..updates as i64).flat_map(|i| [i; 5]).collect();
    let values = Tensor::<B, 2, Int>::from_data(TensorData::new(rows, [updates, 5]), device);
    let assigned = Tensor::<B, 2, Int>::zeros([4, 5], device).scatter_nd(
        indices,
        values,
        IndexingUpdateOp::Assign,
    );
    (added, assigned)
}

fn assert_scatter_nd_exact<B: Backend>(device: &B::Device) {
    let (added, assigned) = scatter_nd_with_repeats::<B>(device);
    let count = |t: usize| (0..4000).filter(|i| i % 3 == t).count() as f32;
    let expected_add: Vec<f32> = (0..4)
        .flat_map(|row| [if row < 3 { count(row) } else { 0.0 }; 5])
        .collect();
    assert_eq!(added.into_data().to_vec::<f32>().unwrap(), expected_add);
    let last = |t: i64| (0..4000i64).filter(|i| i % 3 == t).max().unwrap();
    let expected_assign: Vec<i64> = (0..4)
        .flat_map(|row| [if row < 3 { last(row) } else { 0 }; 5])
        .collect();
    let assigned: Vec<i64> = assigned.into_data().iter::<i64>().collect();
    assert_eq!(assigned, expected_assign);
}

// ---------------------------------------------------------------------------------------------
// Training: a loss reduced by a full `sum()` and gradient clipping by norm (`sqrt(sum(g²))`).

#[cfg(feature = "wgpu")]
mod training {
    use super::{bits, tensor, uniform};
    use burn::module::Module;
    use burn::nn::conv::{Conv2d, Conv2dConfig};
    use burn::nn::PaddingConfig2d;
    use burn::optim::grad_clipping::GradientClippingConfig;
    use burn::optim::{AdamConfig, GradientsParams, Optimizer};
    use burn::tensor::backend::{AutodiffBackend, Backend};
    use burn::tensor::module::interpolate;
    use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
    use burn::tensor::{DType, Tensor};
    use burn_deterministic_suite::metrics::parameter_hash;

    #[derive(Module, Debug)]
    struct UpsampleNet<B: Backend> {
        encode: Conv2d<B>,
        head: Conv2d<B>,
    }

    impl<B: Backend> UpsampleNet<B> {
        fn new(device: &B::Device) -> Self {
            let conv = |i, o| {
                Conv2dConfig::new([i, o], [3, 3])
                    .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                    .init(device)
            };
            Self {
                encode: conv(3, 8),
                head: conv(8, 2),
            }
        }

        /// `[N, 3, H, W] → [N, 2, 16·H, 8·W]`: the last resize makes the loss a full sum over
        /// millions of values, as a segmentation loss at full resolution is.
        fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
            let [_, _, h, w] = x.dims();
            let features = burn::tensor::activation::relu(self.encode.forward(x));
            let up = interpolate(
                features,
                [2 * h, 2 * w],
                InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false),
            );
            let y = self.head.forward(up);
            interpolate(
                y,
                [16 * h, 8 * w],
                InterpolateOptions::new(InterpolateMode::Bicubic).with_align_corners(false),
            )
        }
    }

    /// Two Adam steps with gradient clipping by norm on a squared error summed by a full `sum()`
    /// over 4 Mi values: the parameters' hash and the bits of each step's loss.
    pub fn train<B: AutodiffBackend>(device: &B::Device) -> (String, String) {
        B::seed(device, 7);
        let mut model = UpsampleNet::<B>::new(device);
        let mut optimizer = AdamConfig::new()
            .with_grad_clipping(Some(GradientClippingConfig::Norm(0.5)))
            .init();
        let x: Tensor<B, 4> = tensor(
            &uniform(1, 4 * 3 * 64 * 64),
            [4, 3, 64, 64],
            DType::F32,
            device,
        );
        let target_shape = [4, 2, 1024, 512];
        let target: Tensor<B, 4> = tensor(
            &uniform(2, 4 * 2 * 1024 * 512),
            target_shape,
            DType::F32,
            device,
        );
        let mut losses = Vec::new();
        for _ in 0..2 {
            let loss = (model.forward(x.clone()) - target.clone()).square().sum();
            losses.push(bits(loss.clone().inner()));
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(1e-2, model, grads);
        }
        (parameter_hash(&model), losses.join("-"))
    }
}

// ---------------------------------------------------------------------------------------------
// Child processes: each case prints `PLAIN=` (the plain backend or the switched-off decorator)
// and `DET=` (the decorator) values, several repetitions per process.

/// One deformable convolution's gradients: `[x, offset, weight, mask, bias]`.
/// Through the decorator the input gradient is the rewrite's, within f32 rounding of `B`'s own
/// (a different summation order); the other gradients are `B`'s, bit for bit.
fn deform_conv_input_grad_matches_native<B: Backend>(device: &B::Device) {
    use burn::backend::Autodiff;
    for crowded in [false, true] {
        let [x, offset, weight, mask] = deform_conv_grads::<Autodiff<B>>(device, crowded);
        let [det_x, det_offset, det_weight, det_mask] =
            deform_conv_grads::<Autodiff<Det<B>>>(device, crowded);
        let (native, rewritten) = (x.into_data(), det_x.into_data());
        let (native, rewritten) = (
            native.to_vec::<f32>().unwrap(),
            rewritten.to_vec::<f32>().unwrap(),
        );
        let scale = native.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(
            scale > 0.0,
            "the input gradient is all zeros: the case tests nothing"
        );
        for (i, (a, b)) in native.iter().zip(&rewritten).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * scale,
                "crowded {crowded}: input gradient {i}: native {a}, rewritten {b}"
            );
        }
        assert_eq!(bits(offset), bits(det_offset), "offset gradient");
        assert_eq!(bits(weight), bits(det_weight), "weight gradient");
        assert_eq!(bits(mask), bits(det_mask), "mask gradient");
    }
}

/// The deformable convolution's input gradient `REPEATS` times on `B` and through the decorator.
#[allow(dead_code)]
fn print_deform_conv_input_grads<B: Backend>(device: &B::Device) {
    use burn::backend::Autodiff;
    for _ in 0..REPEATS {
        let [x, ..] = deform_conv_grads::<Autodiff<B>>(device, true);
        println!("PLAIN={}", bits(x));
        let [x, ..] = deform_conv_grads::<Autodiff<Det<B>>>(device, true);
        println!("DET={}", bits(x));
    }
}

const REPEATS: usize = 6;

#[test]
#[ignore = "run as a child process by the negative-control tests"]
fn child_case() {
    pin_autotune_cache_from_env();
    let case = std::env::var(CASE_ENV).expect("run by the parent tests");
    match case.as_str() {
        #[cfg(feature = "wgpu")]
        "sum-wgpu" => print_sums::<burn::backend::Wgpu>(&vulkan(), 4 << 20),
        #[cfg(feature = "flex")]
        "sum-flex" => print_sums::<burn::backend::Flex>(&Default::default(), 32 << 20),
        #[cfg(feature = "wgpu")]
        "scatter-wgpu" => {
            let device = vulkan();
            for _ in 0..REPEATS {
                let (added, assigned) = scatter_nd_with_repeats::<burn::backend::Wgpu>(&device);
                println!("PLAIN={}-{}", bits(added), bits(assigned));
                let (added, assigned) =
                    scatter_nd_with_repeats::<Det<burn::backend::Wgpu>>(&device);
                println!("DET={}-{}", bits(added), bits(assigned));
            }
        }
        #[cfg(feature = "ndarray")]
        "deform-ndarray" => {
            print_deform_conv_input_grads::<burn::backend::NdArray>(&Default::default())
        }
        #[cfg(feature = "wgpu")]
        "deform-wgpu" => print_deform_conv_input_grads::<burn::backend::Wgpu>(&vulkan()),
        #[cfg(feature = "wgpu")]
        "train-wgpu" => {
            type Train = burn::backend::Autodiff<Det<burn::backend::Wgpu>>;
            let device = vulkan();
            let (hash, losses) = training::train::<Train>(&device);
            println!("DET={hash}\nDET_LOSS={losses}");
        }
        other => panic!("unknown case {other}"),
    }
}

#[cfg(feature = "wgpu")]
fn vulkan() -> burn::backend::wgpu::WgpuDevice {
    burn_deterministic_suite::wgpu_setup::test_device()
}

/// A full sum of `n` uniform floats, `REPEATS` times on `B` and through the decorator.
#[allow(dead_code)]
fn print_sums<B: Backend>(device: &B::Device, n: usize) {
    let x = uniform(99, n);
    let plain: Tensor<B, 1> = tensor(&x, [n], DType::F32, device);
    let det: Tensor<Det<B>, 1> = tensor(&x, [n], DType::F32, device);
    for _ in 0..REPEATS {
        println!("PLAIN={}", bits(plain.clone().sum()));
        println!("DET={}", bits(det.clone().sum()));
        let off = configured(switched_off(), || bits(det.clone().sum()));
        println!("OFF={off}");
        println!("PLAIN_MEAN={}", bits(plain.clone().mean()));
        println!("DET_MEAN={}", bits(det.clone().mean()));
    }
}

/// The values one key took in [`PROCESSES`] new processes, and whether every process printed
/// the autotune notice.
struct AcrossProcesses {
    children: Vec<burn_deterministic_suite::processes::Child>,
}

impl AcrossProcesses {
    fn run(case: &str, env: &[(&str, &str)]) -> Self {
        Self {
            children: (0..PROCESSES)
                .map(|_| run_child("child_case", case, env))
                .collect(),
        }
    }

    fn distinct(&self, key: &str) -> BTreeSet<String> {
        let values: BTreeSet<String> = self.children.iter().flat_map(|c| c.values(key)).collect();
        assert!(!values.is_empty(), "no {key}= values from the children");
        values
    }

    /// The negative control `plain` drifts (more than one value) and the decorator's `det` does
    /// not, or, in a build with CubeCL autotune, varies only where every process announced it.
    fn assert_control_drifts_and_decorator_does_not(&self, what: &str, plain: &str, det: &str) {
        let (plain, det) = (self.distinct(plain), self.distinct(det));
        eprintln!(
            "{what}: plain {} distinct value(s), decorator {} ({PROCESSES} processes × {REPEATS})",
            plain.len(),
            det.len()
        );
        let announced = self
            .children
            .iter()
            .all(burn_deterministic_suite::processes::Child::announced_autotune);
        assert!(
            det.len() == 1 || announced,
            "{what}: the decorator gave {} different results",
            det.len()
        );
        assert!(
            plain.len() > 1,
            "{what}: the negative control did not drift: the test cannot tell a fixed-order \
             rewrite from none"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// ndarray: no hazard, nothing rewritten.

#[cfg(feature = "ndarray")]
mod ndarray {
    use super::*;
    use burn::backend::NdArray;

    #[test]
    fn fixed_order_sum_is_exact_and_close_to_native() {
        fixed_order_sum_is_exact_on_integers::<NdArray>(&Default::default());
        fixed_order_sum_matches_native::<NdArray>(&Default::default());
    }

    /// ndarray sums in a fixed order: the decorator keeps its bits.
    #[test]
    fn sums_are_forwarded_unchanged() {
        let n = (5 << 20) + 17;
        let x = uniform(5, n);
        let plain: Tensor<NdArray, 1> = tensor(&x, [n], DType::F32, &Default::default());
        let det: Tensor<Det<NdArray>, 1> = tensor(&x, [n], DType::F32, &Default::default());
        assert_eq!(bits(plain.clone().sum()), bits(det.clone().sum()));
        assert_eq!(bits(plain.mean()), bits(det.mean()));
    }

    /// ndarray's input gradient uses `AtomicF32` under rayon when burn-ndarray's
    /// `multi-threads` is on (not in this build): the decorator rewrites it either way.
    #[test]
    fn deform_conv_input_grad_is_rewritten_and_close_to_native() {
        deform_conv_input_grad_matches_native::<NdArray>(&Default::default());
    }

    /// Negative control, in the build with Burn's default features (burn-ndarray's
    /// `multi-threads` on; CI runs it there): ndarray's input gradient adds into `AtomicF32`s
    /// from 8 rayon threads in a varying order; the decorator's gives one result.
    #[cfg(feature = "wgpu-default-features")]
    #[test]
    fn deform_conv_input_grad_drifts_natively_and_not_through_the_decorator() {
        AcrossProcesses::run("deform-ndarray", &[("RAYON_NUM_THREADS", "8")])
            .assert_control_drifts_and_decorator_does_not(
                "multi-threaded ndarray deform_conv2d input gradient",
                "PLAIN",
                "DET",
            );
    }
}

// ---------------------------------------------------------------------------------------------
// flex: f32 sums and means from 4 Mi elements are rayon-parallel, and rewritten.

#[cfg(feature = "flex")]
mod flex {
    use super::*;
    use burn::backend::Flex;

    #[test]
    fn fixed_order_sum_is_exact_and_close_to_native() {
        fixed_order_sum_is_exact_on_integers::<Flex>(&Default::default());
        fixed_order_sum_matches_native::<Flex>(&Default::default());
    }

    /// Below 4 Mi elements flex's sum is sequential and kept bit for bit; from there on the
    /// decorator's sum is the fixed-order tree (and its mean the tree divided by the count),
    /// unless `fixed_order_ops` is off.
    #[test]
    fn large_f32_sums_are_rewritten_small_ones_kept() {
        let device = Default::default();
        for (n, rewritten) in [
            ((4 << 20) - 1, false),
            (4 << 20, true),
            ((6 << 20) + 3, true),
        ] {
            let x = uniform(n as u64, n);
            let plain: Tensor<Flex, 1> = tensor(&x, [n], DType::F32, &device);
            let det: Tensor<Det<Flex>, 1> = tensor(&x, [n], DType::F32, &device);
            let expected_sum = if rewritten {
                bits(tree_sum(plain.clone()))
            } else {
                bits(plain.clone().sum())
            };
            let expected_mean = if rewritten {
                bits(tree_sum(plain.clone()) / n as f64)
            } else {
                bits(plain.clone().mean())
            };
            assert_eq!(bits(det.clone().sum()), expected_sum, "sum of {n}");
            assert_eq!(bits(det.clone().mean()), expected_mean, "mean of {n}");
            if !rewritten {
                let off = configured(switched_off(), || {
                    (bits(det.clone().sum()), bits(det.mean()))
                });
                assert_eq!(
                    off,
                    (bits(plain.clone().sum()), bits(plain.mean())),
                    "{n}, switched off"
                );
            }
            // Switched off, a rewritten size gets flex's parallel sum back, whose bits may change
            // from call to call: `large_sum_drifts_…` shows it drifting across processes.
        }
    }

    /// flex has no scatter_nd hazard: forwarded, and exact (its scatter is sequential).
    #[test]
    fn scatter_nd_with_repeats_is_exact() {
        assert_scatter_nd_exact::<Flex>(&Default::default());
        assert_scatter_nd_exact::<Det<Flex>>(&Default::default());
    }

    /// flex's deformable-convolution backward is one sequential loop: forwarded bit for bit.
    #[test]
    fn deform_conv_backward_is_forwarded() {
        use burn::backend::Autodiff;
        let device = Default::default();
        for crowded in [false, true] {
            let plain = deform_conv_grads::<Autodiff<Flex>>(&device, crowded);
            let det = deform_conv_grads::<Autodiff<Det<Flex>>>(&device, crowded);
            for (a, b) in plain.into_iter().zip(det) {
                assert_eq!(bits(a), bits(b));
            }
        }
    }

    /// An independent implementation: the decorator's rewritten input gradient on ndarray is
    /// within f32 rounding of flex's sequential loop.
    #[cfg(feature = "ndarray")]
    #[test]
    fn deform_conv_input_grad_matches_flex() {
        use burn::backend::{Autodiff, NdArray};
        for crowded in [false, true] {
            let [flex, ..] = deform_conv_grads::<Autodiff<Flex>>(&Default::default(), crowded);
            let [det, ..] =
                deform_conv_grads::<Autodiff<Det<NdArray>>>(&Default::default(), crowded);
            let (flex, det) = (
                flex.into_data().to_vec::<f32>().unwrap(),
                det.into_data().to_vec::<f32>().unwrap(),
            );
            let scale = flex.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(scale > 0.0);
            for (i, (a, b)) in flex.iter().zip(&det).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * scale,
                    "crowded {crowded}: {i}: flex {a}, decorator {b}"
                );
            }
        }
    }

    /// Negative control: flex's own sum of 32 Mi floats in 5 processes × 6 repetitions gives
    /// more than one result; the decorator's gives one. Rayon runs 8 threads, as on an 8-core
    /// machine: how often the split tree changes grows with the thread count (measured here:
    /// 8 Mi elements gave one value with 2–16 threads; 32 Mi gave 1–3 values per process with
    /// 2 threads and 4–5 with 8).
    #[test]
    fn large_sum_drifts_natively_and_not_through_the_decorator() {
        let runs = AcrossProcesses::run("sum-flex", &[("RAYON_NUM_THREADS", "8")]);
        runs.assert_control_drifts_and_decorator_does_not("flex sum", "PLAIN", "DET");
        // `fixed_order_ops: false` really hands the op back to flex.
        runs.assert_control_drifts_and_decorator_does_not("flex sum, switched off", "OFF", "DET");
        runs.assert_control_drifts_and_decorator_does_not("flex mean", "PLAIN_MEAN", "DET_MEAN");
    }
}

// ---------------------------------------------------------------------------------------------
// wgpu (CubeCL on software Vulkan): the full sum ends in float atomics, scatter_nd races.

#[cfg(feature = "wgpu")]
mod wgpu {
    use super::*;
    use burn::backend::Wgpu;

    #[test]
    fn fixed_order_sum_is_exact_and_close_to_native() {
        let device = vulkan();
        fixed_order_sum_is_exact_on_integers::<Wgpu>(&device);
        fixed_order_sum_matches_native::<Wgpu>(&device);
    }

    /// The decorator's sum is the tree; its mean stays CubeCL's (a fixed chain of per-axis
    /// reductions), bit for bit.
    #[test]
    fn sum_is_rewritten_mean_kept() {
        let device = vulkan();
        let n = 300_001;
        let x = uniform(3, n);
        let plain: Tensor<Wgpu, 1> = tensor(&x, [n], DType::F32, &device);
        let det: Tensor<Det<Wgpu>, 1> = tensor(&x, [n], DType::F32, &device);
        assert_eq!(bits(det.clone().sum()), bits(tree_sum(plain.clone())));
        assert_eq!(bits(det.mean()), bits(plain.mean()));
    }

    /// Through the decorator, repeated targets are all applied, in index order.
    #[test]
    fn scatter_nd_with_repeats_is_exact() {
        assert_scatter_nd_exact::<Det<Wgpu>>(&vulkan());
    }

    /// A quantized tensor's sum is the fixed-order tree over its dequantized values (Burn's
    /// default `q_sum`, which CubeCL keeps, would reach the atomic float sum).
    #[test]
    fn quantized_sum_is_the_fixed_order_tree() {
        use burn::tensor::quantization::QuantScheme;
        let device = vulkan();
        let n = 100_000; // packed 4 per u32 on CubeCL: a multiple of 4
        let x = uniform(8, n);
        let quantized = tensor::<Det<Wgpu>, 1>(&x, [n], DType::F32, &device)
            .quantize_dynamic(&QuantScheme::default());
        let expected = tree_sum(quantized.clone().dequantize());
        let sum = quantized.sum();
        let sum = if matches!(sum.dtype(), DType::QFloat(_)) {
            sum.dequantize()
        } else {
            sum
        };
        assert_eq!(bits(sum), bits(expected));
    }

    /// The report counts the sum rewritten on the wgpu device, and, under `fixed_order_ops:
    /// false`, the sum left to CubeCL, which it names as a hazard. (Counts are per process and
    /// other tests run beside this one: compared as increases.)
    #[test]
    fn the_report_counts_rewrites_and_hazards_left_to_the_backend() {
        use burn_deterministic::report::{report, DeterminismReport, Rewrite};
        let device = vulkan();
        let sums = |report: &DeterminismReport, left: bool| -> u64 {
            report
                .devices
                .iter()
                .filter(|d| d.backend.contains("wgpu"))
                .flat_map(|d| {
                    if left {
                        &d.left_to_backend
                    } else {
                        &d.rewrites
                    }
                })
                .filter(|(op, _)| *op == Rewrite::FixedOrderSum)
                .map(|(_, count)| count)
                .sum()
        };
        let before = report();
        let x = uniform(4, 10_000);
        let det = tensor::<Det<Wgpu>, 1>(&x, [10_000], DType::F32, &device);
        let _ = det.clone().sum().into_data();
        configured(switched_off(), || det.sum().into_data());
        let after = report();
        assert!(sums(&after, false) > sums(&before, false), "{after}");
        assert!(sums(&after, true) > sums(&before, true), "{after}");
        assert!(
            after
                .hazards()
                .iter()
                .any(|h| h.contains("fixed-order sum left to the backend")),
            "{after}"
        );
        assert!(after.configuration.scoped);
    }

    /// Negative control: CubeCL's sum of 4 Mi floats in 5 processes × 6 repetitions gives more
    /// than one result (measured: 2–3 values in every process; 1 Mi gave one value in 30
    /// runs); the decorator's gives one.
    #[test]
    fn sum_drifts_natively_and_not_through_the_decorator() {
        AcrossProcesses::run("sum-wgpu", &[])
            .assert_control_drifts_and_decorator_does_not("wgpu sum", "PLAIN", "DET");
    }

    /// Negative control: CubeCL's scatter_nd with repeated targets loses a varying number of
    /// updates; the decorator's is one exact result.
    #[test]
    fn scatter_nd_drifts_natively_and_not_through_the_decorator() {
        AcrossProcesses::run("scatter-wgpu", &[]).assert_control_drifts_and_decorator_does_not(
            "wgpu scatter_nd",
            "PLAIN",
            "DET",
        );
    }

    #[test]
    fn deform_conv_input_grad_is_rewritten_and_close_to_native() {
        deform_conv_input_grad_matches_native::<Wgpu>(&vulkan());
    }

    /// Negative control: CubeCL's deformable-convolution input gradient, with thousands of
    /// samples per input pixel, adds them with float atomics in a varying order; the
    /// decorator's ordered scatters give one result.
    #[test]
    fn deform_conv_input_grad_drifts_natively_and_not_through_the_decorator() {
        AcrossProcesses::run("deform-wgpu", &[]).assert_control_drifts_and_decorator_does_not(
            "wgpu deform_conv2d input gradient",
            "PLAIN",
            "DET",
        );
    }

    /// A `sum()` loss and gradient clipping by norm (Adam) train to one parameter hash and one
    /// loss sequence in 5 processes. Its negative control is `sum_drifts_natively_…` above:
    /// this model's own switched-off run (`fixed_order_ops: false`) did not drift here, neither
    /// its loss values nor its parameters (measured in 5 processes; a last-bit change of a
    /// 4 Mi-term loss moves two steps' updates by far less than a parameter's last bit), so
    /// it is not run.
    #[test]
    fn training_with_sum_loss_and_norm_clipping_is_reproducible() {
        let runs = AcrossProcesses::run("train-wgpu", &[]);
        let announced = runs
            .children
            .iter()
            .all(burn_deterministic_suite::processes::Child::announced_autotune);
        for key in ["DET", "DET_LOSS"] {
            let values = runs.distinct(key);
            assert!(values.len() == 1 || announced, "{key}: {values:?}");
        }
    }
}
