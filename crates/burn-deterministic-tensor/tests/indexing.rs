//! The fixed-order indexing ops and `deform_conv2d` against Burn 0.22.1's own, on flex and on
//! wgpu (Vulkan; llvmpipe without a GPU): the same forward (bit for bit where Burn's is a copy
//! or fixed-order), gradients within f32 summation error (exact on small integers, where every
//! order of addition gives the exact sum), repeated, empty and out-of-range indices, f64.
//!
//! And the promise across processes: in 5 new processes (each with an empty autotune cache)
//! Burn's gather backward, float scatter-add, `scatter_nd` add and deformable-convolution input
//! gradient give more than one result on wgpu, the crate's functions one.

mod common;

use burn::tensor::module;
use burn::tensor::ops::DeformConvOptions;
use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_deterministic_tensor::fixed_order;
use burn_deterministic_tensor::IndexError;
use common::{bits_hash, max_scaled_error, run_child, uniform, values, values_of};

const HELPER: &str = "child_process_helper";

fn float<const D: usize>(
    values: &[f64],
    shape: [usize; D],
    dtype: DType,
    device: &Device,
) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), (device, dtype))
}

fn ints<const D: usize>(values: Vec<i64>, shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// Indices in `0..size`, `n` of them, many repeated (a small LCG).
fn repeated(seed: u64, n: usize, size: usize) -> Vec<i64> {
    uniform(seed, n)
        .iter()
        .map(|u| (((u + 1.0) / 2.0 * size as f64) as i64).min(size as i64 - 1))
        .collect()
}

/// Small integers in -4..=4 (their sums are exact in f32 in any order).
fn small_integers(seed: u64, n: usize) -> Vec<f64> {
    uniform(seed, n).iter().map(|u| (u * 4.5).round()).collect()
}

/// Gradient values are exact (`exact`) or within f32 summation error of Burn's.
fn assert_close(ours: Vec<f64>, burns: Vec<f64>, exact: bool, what: &str) {
    if exact {
        assert_eq!(ours, burns, "{what}");
    } else {
        let error = max_scaled_error(&ours, &burns);
        assert!(error <= 1e-5, "{what}: error {error}");
    }
}

/// `gather` along every dimension of a `[4, 37, 5]` tensor, indices repeating: Burn's forward
/// bit for bit, Burn's gradient (exact on integers).
fn gather_matches_burns(device: &Device, dtype: DType) {
    let shape = [4, 37, 5];
    for (dim, exact) in [(0, true), (1, true), (2, false), (1, false)] {
        let n: usize = shape.iter().product();
        let x_values = if exact {
            small_integers(1, n)
        } else {
            uniform(1, n)
        };
        let mut index_shape = shape;
        index_shape[dim] = 9;
        let m: usize = index_shape.iter().product();
        let indices = ints(repeated(2 + dim as u64, m, shape[dim]), index_shape, device);
        let upstream = if exact {
            small_integers(3, m)
        } else {
            uniform(3, m)
        };
        let upstream = float(&upstream, index_shape, dtype, device);
        let run = |gather: fn(Tensor<3>, usize, Tensor<3, Int>) -> Tensor<3>| {
            let x = float(&x_values, shape, dtype, device).require_grad();
            let y = gather(x.clone(), dim, indices.clone());
            let grads = (y.clone() * upstream.clone()).sum().backward();
            (y, values(x.grad(&grads).expect("x has a gradient")))
        };
        let (ours, our_grad) = run(fixed_order::gather);
        let (burns, burn_grad) = run(|x, d, i| x.gather(d, i));
        assert_eq!(ours.to_data(), burns.to_data(), "gather dim {dim}: forward");
        assert_close(
            our_grad,
            burn_grad,
            exact,
            &format!("gather dim {dim}: gradient"),
        );
    }
}

/// `select` and `select_assign` (`Add`) along dims 0 and 1 with repeated indices: Burn's
/// forward (a copy: bit for bit; an add: exact on integers), Burn's gradients.
fn select_matches_burns(device: &Device, dtype: DType) {
    let shape = [6, 7, 3];
    for dim in [0, 1] {
        let n: usize = shape.iter().product();
        let indices_host = repeated(7 + dim as u64, 40, shape[dim]);
        let indices = ints(indices_host, [40], device);
        let mut out_shape = shape;
        out_shape[dim] = 40;
        let m: usize = out_shape.iter().product();
        let upstream = float(&small_integers(8, m), out_shape, dtype, device);

        let x_values = small_integers(9, n);
        let run = |select: fn(Tensor<3>, usize, Tensor<1, Int>) -> Tensor<3>| {
            let x = float(&x_values, shape, dtype, device).require_grad();
            let y = select(x.clone(), dim, indices.clone());
            let grads = (y.clone() * upstream.clone()).sum().backward();
            (y, values(x.grad(&grads).expect("x has a gradient")))
        };
        let (ours, our_grad) = run(fixed_order::select);
        let (burns, burn_grad) = run(|x, d, i| x.select(d, i));
        assert_eq!(ours.to_data(), burns.to_data(), "select dim {dim}: forward");
        assert_close(
            our_grad,
            burn_grad,
            true,
            &format!("select dim {dim}: gradient"),
        );

        // select_assign with Add: forward and both gradients.
        let run = |assign: fn(Tensor<3>, usize, Tensor<1, Int>, Tensor<3>) -> Tensor<3>| {
            let x = float(&x_values, shape, dtype, device).require_grad();
            let v = float(&small_integers(10, m), out_shape, dtype, device).require_grad();
            let y = assign(x.clone(), dim, indices.clone(), v.clone());
            let weights = float(&small_integers(11, n), shape, dtype, device);
            let grads = (y.clone() * weights).sum().backward();
            (
                values(y),
                values(x.grad(&grads).expect("x has a gradient")),
                values(v.grad(&grads).expect("v has a gradient")),
            )
        };
        let ours = run(|x, d, i, v| fixed_order::select_assign(x, d, i, v, IndexingUpdateOp::Add));
        let burns = run(|x, d, i, v| x.select_assign(d, i, v, IndexingUpdateOp::Add));
        assert_eq!(ours, burns, "select_assign dim {dim}");
    }
}

/// Float `scatter` with `Add` (forward and gradients) and `Assign` (Burn's) along dims 0 and 1.
fn scatter_matches_burns(device: &Device, dtype: DType) {
    let shape = [5, 8];
    let index_shape = [30, 8];
    let indices = ints(repeated(12, 240, 5), index_shape, device);
    for exact in [true, false] {
        let values_host = if exact {
            small_integers(13, 240)
        } else {
            uniform(13, 240)
        };
        let run = |scatter: fn(Tensor<2>, Tensor<2, Int>, Tensor<2>) -> Tensor<2>| {
            let x = float(&uniform(14, 40), shape, dtype, device).require_grad();
            let v = float(&values_host, index_shape, dtype, device).require_grad();
            let y = scatter(x.clone(), indices.clone(), v.clone());
            let weights = float(&uniform(15, 40), shape, dtype, device);
            let grads = (y.clone() * weights).sum().backward();
            (
                values(y),
                values(x.grad(&grads).expect("x has a gradient")),
                values(v.grad(&grads).expect("v has a gradient")),
            )
        };
        let ours = run(|x, i, v| fixed_order::scatter(x, 0, i, v, IndexingUpdateOp::Add));
        let burns = run(|x, i, v| x.scatter(0, i, v, IndexingUpdateOp::Add));
        // x + (sum of integers) is one rounding in both: exact either way for integers.
        assert_close(ours.0, burns.0, false, "scatter add: forward");
        assert_eq!(
            ours.1, burns.1,
            "scatter add: gradient of the tensor (identity)"
        );
        assert_eq!(
            ours.2, burns.2,
            "scatter add: gradient of the values (a gather)"
        );
    }
    // Along dim 1, integers: exact.
    let indices = ints(repeated(16, 5 * 20, 8), [5, 20], device);
    let v = float(&small_integers(17, 100), [5, 20], dtype, device);
    let zeros = Tensor::<2>::zeros(shape, (device, dtype));
    let ours = fixed_order::scatter(
        zeros.clone(),
        1,
        indices.clone(),
        v.clone(),
        IndexingUpdateOp::Add,
    );
    let burns = zeros.scatter(1, indices, v, IndexingUpdateOp::Add);
    assert_eq!(values(ours), values(burns), "scatter add along dim 1");
}

/// `gather_nd` and `scatter_nd` (`Add`) against a host computation (Burn 0.22.1's CubeCL
/// `scatter_nd` loses updates, so it is no reference there).
fn nd_matches_the_host(device: &Device, dtype: DType) {
    // data [4, 3, 2]; 50 tuples of length 2 into the leading [4, 3], slices of width 2.
    let data_host = small_integers(20, 24);
    let tuples: Vec<i64> = repeated(21, 50, 4)
        .into_iter()
        .zip(repeated(22, 50, 3))
        .flat_map(|(a, b)| [a, b])
        .collect();
    let indices = ints(tuples.clone(), [50, 2], device);
    let data = float(&data_host, [4, 3, 2], dtype, device).require_grad();
    let gathered: Tensor<2> = fixed_order::gather_nd(data.clone(), indices.clone());
    let upstream = small_integers(23, 100);
    let grads = (gathered.clone() * float(&upstream, [50, 2], dtype, device))
        .sum()
        .backward();
    let mut expected_forward = Vec::new();
    let mut expected_grad = vec![0.0; 24];
    for (n, tuple) in tuples.chunks(2).enumerate() {
        let row = (tuple[0] * 3 + tuple[1]) as usize;
        for j in 0..2 {
            expected_forward.push(data_host[row * 2 + j]);
            expected_grad[row * 2 + j] += upstream[n * 2 + j];
        }
    }
    assert_eq!(values(gathered), expected_forward, "gather_nd forward");
    assert_eq!(
        values(data.grad(&grads).unwrap()),
        expected_grad,
        "gather_nd gradient"
    );

    let zeros = Tensor::<3>::zeros([4, 3, 2], (device, dtype));
    let scattered = fixed_order::scatter_nd(
        zeros,
        indices,
        float(&upstream, [50, 2], dtype, device),
        IndexingUpdateOp::Add,
    );
    assert_eq!(values(scattered), expected_grad, "scatter_nd add");
}

/// No index, and indices out of range: an empty result (as Burn's), or a named error.
fn edge_cases(device: &Device) {
    let x = Tensor::<2>::ones([3, 4], device);
    let none = ints(Vec::new(), [0], device);
    assert_eq!(
        fixed_order::select(x.clone(), 0, none.clone()).dims(),
        [0, 4]
    );
    let unchanged = fixed_order::select_assign(
        x.clone(),
        1,
        none,
        Tensor::zeros([3, 0], device),
        IndexingUpdateOp::Add,
    );
    assert_eq!(values(unchanged), vec![1.0; 12]);
    let gathered = fixed_order::gather(x.clone(), 1, ints(Vec::new(), [3, 0], device));
    assert_eq!(gathered.dims(), [3, 0]);

    let error = fixed_order::try_gather(x.clone(), 1, ints(vec![0, 1, 4], [3, 1], device))
        .expect_err("index 4 of a dimension of 4");
    assert_eq!(
        error,
        IndexError::OutOfRange {
            op: "gather",
            index: 4,
            dim: 1,
            size: 4
        }
    );
    assert!(error.to_string().contains("index 4 is out of range"));
    assert!(matches!(
        fixed_order::try_select(x.clone(), 0, ints(vec![-1], [1], device)),
        Err(IndexError::OutOfRange { index: -1, .. })
    ));
    assert!(matches!(
        fixed_order::try_scatter(
            x.clone(),
            0,
            ints(vec![3; 4], [1, 4], device),
            Tensor::ones([1, 4], device),
            IndexingUpdateOp::Add
        ),
        Err(IndexError::OutOfRange { index: 3, .. })
    ));
    assert!(matches!(
        fixed_order::try_scatter(
            x.clone(),
            0,
            ints(vec![0; 4], [1, 4], device),
            Tensor::ones([2, 4], device),
            IndexingUpdateOp::Add
        ),
        Err(IndexError::Shape { .. })
    ));
    assert!(matches!(
        fixed_order::try_gather_nd::<2, 2, 1>(x, ints(vec![2, 4], [1, 2], device)),
        Err(IndexError::OutOfRange {
            index: 4,
            dim: 1,
            ..
        })
    ));
}

/// A deformable convolution with offset groups, weight groups, a mask, stride, padding and
/// dilation: Burn's forward bit for bit, every gradient within f32 rounding of Burn's.
fn deform_conv_matches_burns(device: &Device, dtype: DType) {
    let (batch, channels, size, out_channels) = (2, 4, 7, 6);
    let options = DeformConvOptions::new([2, 1], [1, 2], [1, 2], 2, 2);
    let [kh, kw] = [3, 2];
    let out_h = (size + 2 - (kh - 1) - 1) / 2 + 1;
    let out_w = size + 4 - 2 * (kw - 1);
    let taps = kh * kw;
    let x_values = uniform(30, batch * channels * size * size);
    let offset_values: Vec<f64> = uniform(31, batch * 2 * taps * 2 * out_h * out_w)
        .iter()
        .map(|u| 2.5 * u)
        .collect();
    let mask_values = uniform(32, batch * 2 * taps * out_h * out_w);
    let weight_values = uniform(33, out_channels * channels / 2 * taps);
    let upstream = float(
        &uniform(34, batch * out_channels * out_h * out_w),
        [batch, out_channels, out_h, out_w],
        dtype,
        device,
    );
    let run = |deform: common::DeformConv2d| {
        let x = float(&x_values, [batch, channels, size, size], dtype, device).require_grad();
        let offset = float(
            &offset_values,
            [batch, 2 * taps * 2, out_h, out_w],
            dtype,
            device,
        )
        .require_grad();
        let mask =
            float(&mask_values, [batch, 2 * taps, out_h, out_w], dtype, device).require_grad();
        let weight = float(
            &weight_values,
            [out_channels, channels / 2, kh, kw],
            dtype,
            device,
        )
        .require_grad();
        let bias = Tensor::<1>::from_data(
            TensorData::new(uniform(35, out_channels), [out_channels]),
            (device, dtype),
        )
        .require_grad();
        // The input is computed from the leaf, as a feature map is: its gradient must still
        // flow (a leaf-only test, `is_require_grad`, would miss it).
        let y = deform(
            x.clone().mul_scalar(2.0),
            offset.clone(),
            weight.clone(),
            Some(mask.clone()),
            Some(bias.clone()),
            options.clone(),
        );
        let grads = (y.clone() * upstream.clone()).sum().backward();
        let grad = |t: Tensor<4>| values(t.grad(&grads).expect("a gradient"));
        (
            y.into_data(),
            [
                grad(x),
                grad(offset),
                grad(mask),
                grad(weight),
                values(bias.grad(&grads).expect("a gradient")),
            ],
        )
    };
    let (ours, our_grads) = run(fixed_order::deform_conv2d);
    let (burns, burn_grads) = run(module::deform_conv2d);
    assert_eq!(ours, burns, "deform_conv2d forward");
    for (name, (ours, burns)) in ["x", "offset", "mask", "weight", "bias"]
        .iter()
        .zip(our_grads.into_iter().zip(burn_grads))
    {
        let error = max_scaled_error(&ours, &burns);
        assert!(
            error <= 1e-5,
            "deform_conv2d gradient of {name}: error {error}"
        );
    }
}

/// One result per op, for the cross-process comparison: each op 3 times, with indices that
/// repeat thousands of times (1 Mi values into 64 places).
#[test]
#[ignore = "run by the other tests in a child process"]
fn child_process_helper() {
    let Some((device, kind)) = common::child_device_and_case() else {
        return;
    };
    let fixed = kind == "fixed";
    let n = 1 << 20;
    let targets: Vec<i64> = (0..n as i64).map(|i| (i * 7) % 64).collect();
    for _ in 0..3 {
        // The backward of gather: 1 Mi gradients onto 64 elements.
        let x = float(&uniform(40, 64), [64], DType::F32, &device).require_grad();
        let indices = ints(targets.clone(), [n], &device);
        let gathered = match fixed {
            true => fixed_order::gather(x.clone(), 0, indices.clone()),
            false => x.clone().gather(0, indices.clone()),
        };
        let upstream = float(&uniform(41, n), [n], DType::F32, &device);
        let grads = (gathered * upstream.clone()).sum_dim(0).backward();
        println!("GATHER={}", bits_hash([x.grad(&grads).unwrap()]));

        // Float scatter-add and scatter_nd add: 1 Mi values into 64 places.
        let zeros = Tensor::<1>::zeros([64], &device);
        let scattered = match fixed {
            true => fixed_order::scatter(
                zeros.clone(),
                0,
                indices.clone(),
                upstream.clone(),
                IndexingUpdateOp::Add,
            ),
            false => {
                zeros
                    .clone()
                    .scatter(0, indices.clone(), upstream.clone(), IndexingUpdateOp::Add)
            }
        };
        println!("SCATTER={}", bits_hash([scattered]));
        let tuples = indices.reshape([n, 1]);
        let scattered = match fixed {
            true => fixed_order::scatter_nd(zeros.clone(), tuples, upstream, IndexingUpdateOp::Add),
            false => zeros.scatter_nd(tuples, upstream, IndexingUpdateOp::Add),
        };
        println!("SCATTER_ND={}", bits_hash([scattered]));

        println!(
            "DEFORM={}",
            bits_hash([crowded_deform_conv_input_grad(&device, fixed)])
        );
    }
}

/// The input gradient of a deformable convolution whose offsets pull every sample of a large,
/// padded output onto one fractional point of a `[1, 2, 6, 6]` input: each of its four
/// neighbours receives about 12 000 contributions (CubeCL adds them with float atomics).
fn crowded_deform_conv_input_grad(device: &Device, fixed: bool) -> Tensor<4> {
    let (channels, size, kernel, padding) = (2, 6, 3, 16);
    let out = size + 2 * padding - (kernel - 1);
    let taps = kernel * kernel;
    let x = float(
        &uniform(11, channels * size * size),
        [1, channels, size, size],
        DType::F32,
        device,
    )
    .require_grad();
    let weight = float(
        &uniform(12, channels * channels * taps),
        [channels, channels, kernel, kernel],
        DType::F32,
        device,
    );
    let offsets = burn_deterministic_testkit::crowded_deform_offsets(kernel, out, padding, 2.3);
    let offset = float(&offsets, [1, 2 * taps, out, out], DType::F32, device);
    let upstream = float(
        &uniform(13, channels * out * out),
        [1, channels, out, out],
        DType::F32,
        device,
    );
    let options = DeformConvOptions::new([1, 1], [padding, padding], [1, 1], 1, 1);
    let deform = match fixed {
        true => fixed_order::deform_conv2d,
        false => module::deform_conv2d,
    };
    let y = deform(x.clone(), offset, weight, None, None, options);
    let gradients = (y * upstream).sum_dim(1).sum_dim(2).sum_dim(3).backward();
    x.grad(&gradients).expect("x has a gradient")
}

/// Distinct values of each op's key over 5 new processes × 3 repeats.
fn distinct_per_op(case: &str) -> Vec<(&'static str, usize)> {
    let outputs: Vec<String> = (0..5).map(|_| run_child(HELPER, case)).collect();
    ["GATHER", "SCATTER", "SCATTER_ND", "DEFORM"]
        .into_iter()
        .map(|key| {
            let mut seen: Vec<String> = outputs.iter().flat_map(|o| values_of(o, key)).collect();
            assert_eq!(seen.len(), 15, "{case}: {key} values printed");
            seen.sort();
            seen.dedup();
            (key, seen.len())
        })
        .collect()
}

mod wgpu {
    use super::*;

    #[test]
    fn gather_matches_burns_on_wgpu() {
        gather_matches_burns(&common::vulkan(), DType::F32);
    }

    #[test]
    fn select_and_select_assign_match_burns_on_wgpu() {
        select_matches_burns(&common::vulkan(), DType::F32);
    }

    #[test]
    fn scatter_matches_burns_on_wgpu() {
        scatter_matches_burns(&common::vulkan(), DType::F32);
    }

    #[test]
    fn gather_nd_and_scatter_nd_match_the_host_on_wgpu() {
        nd_matches_the_host(&common::vulkan(), DType::F32);
    }

    #[test]
    fn empty_and_out_of_range_indices_on_wgpu() {
        edge_cases(&common::vulkan());
    }

    #[test]
    fn deform_conv2d_matches_burns_on_wgpu() {
        deform_conv_matches_burns(&common::vulkan(), DType::F32);
    }

    /// The negative controls and the promise, side by side: Burn's ops give more than one
    /// result across 5 processes, the crate's one.
    #[test]
    fn burn_indexing_ops_drift_across_processes_and_the_fixed_order_ones_do_not() {
        let burns = distinct_per_op("wgpu/burn");
        let ours = distinct_per_op("wgpu/fixed");
        eprintln!("distinct results in 15, Burn's: {burns:?}; fixed-order: {ours:?}");
        for (key, distinct) in burns {
            assert!(
                distinct > 1,
                "Burn's {key} did not drift: its control cannot fail"
            );
        }
        for (key, distinct) in ours {
            assert_eq!(distinct, 1, "the fixed-order {key} drifted");
        }
    }
}

mod flex {
    use super::*;

    #[test]
    fn gather_matches_burns_on_flex_in_f32_and_f64() {
        gather_matches_burns(&common::flex(), DType::F32);
        gather_matches_burns(&common::flex(), DType::F64);
    }

    #[test]
    fn select_and_select_assign_match_burns_on_flex_in_f32_and_f64() {
        select_matches_burns(&common::flex(), DType::F32);
        select_matches_burns(&common::flex(), DType::F64);
    }

    #[test]
    fn scatter_matches_burns_on_flex_in_f32_and_f64() {
        scatter_matches_burns(&common::flex(), DType::F32);
        scatter_matches_burns(&common::flex(), DType::F64);
    }

    #[test]
    fn gather_nd_and_scatter_nd_match_the_host_on_flex() {
        nd_matches_the_host(&common::flex(), DType::F32);
        nd_matches_the_host(&common::flex(), DType::F64);
    }

    #[test]
    fn empty_and_out_of_range_indices_on_flex() {
        edge_cases(&common::flex());
    }

    #[test]
    fn deform_conv2d_matches_burns_on_flex_in_f32_and_f64() {
        deform_conv_matches_burns(&common::flex(), DType::F32);
        deform_conv_matches_burns(&common::flex(), DType::F64);
    }

    /// Flex adds in one order already (plain loops: Burn's ops give one result too); the
    /// fixed-order functions keep it so there.
    #[test]
    fn the_fixed_order_ops_give_one_result_across_processes_on_flex() {
        for (key, distinct) in distinct_per_op("flex/fixed") {
            assert_eq!(distinct, 1, "the fixed-order {key} drifted on flex");
        }
    }

    /// The report counts each function on its device (other tests of this process count too:
    /// at least one more each), names this crate and says the device does not autotune.
    #[test]
    fn the_report_counts_each_replacement_on_its_device() {
        use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
        use burn_deterministic_tensor::report::{report, Layout, Mode, Rewrite};

        let counted = [
            Rewrite::PairwiseGather,
            Rewrite::PairwiseScatterAdd,
            Rewrite::DeformConv2dInputGrad,
            Rewrite::FixedOrderSum,
            Rewrite::ResizeBackward {
                mode: Mode::Bilinear,
                layouts: [Layout::Dense, Layout::Dense],
            },
        ];
        let counts = || {
            let report = report();
            counted.map(|wanted| {
                report
                    .devices
                    .iter()
                    .filter(|device| device.backend.contains("flex"))
                    .flat_map(|device| &device.rewrites)
                    .filter(|(rewrite, _)| *rewrite == wanted)
                    .map(|(_, count)| count)
                    .sum::<u64>()
            })
        };
        let before = counts();
        let device = common::flex();
        let x = float(&uniform(60, 16), [1, 1, 4, 4], DType::F32, &device).require_grad();
        let indices = ints(vec![0, 3, 3, 5], [4], &device);
        let _ = fixed_order::gather(x.clone().reshape([16]), 0, indices.clone());
        let _ = fixed_order::scatter(
            Tensor::<1>::zeros([16], &device),
            0,
            indices,
            Tensor::ones([4], &device),
            IndexingUpdateOp::Add,
        );
        let offset = Tensor::<4>::zeros([1, 2, 4, 4], &device);
        let weight = Tensor::<4>::ones([1, 1, 1, 1], &device);
        let options = DeformConvOptions::new([1, 1], [0, 0], [1, 1], 1, 1);
        let _ = fixed_order::deform_conv2d(x.clone(), offset, weight, None, None, options);
        let _ = fixed_order::sum(x.clone());
        let resize = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([8, 8]);
        // A resize of a tensor computed from the leaf (as a feature map is) has a backward too.
        let _ = burn_deterministic_tensor::interpolate(x.mul_scalar(2.0), resize);
        let after = counts();
        for ((rewrite, before), after) in counted.iter().zip(before).zip(after) {
            assert!(after > before, "{rewrite}: {before} -> {after}");
        }
        let text = report().to_string();
        assert!(
            text.starts_with("burn-deterministic-tensor report"),
            "{text}"
        );
        assert!(text.contains("pairwise scatter-add"), "{text}");
        let json = report().to_json();
        let flex = json["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .find(|device| {
                device["backend"]
                    .as_str()
                    .is_some_and(|b| b.contains("flex"))
            })
            .expect("the flex device is reported");
        assert_eq!(flex["autotuned"], false);
    }
}
