//! The library's fresh-process determinism check (`burn_deterministic::train`): it runs this
//! test binary's `check_run` helper again in new processes, each with an empty autotune cache,
//! and compares the parameter hashes they print. It agrees on a training through the decorator
//! and catches real drift: its negative control is the plain wgpu deformable convolution's
//! input gradient (CubeCL adds it with float atomics), hashed as a parameter.
#![cfg(all(feature = "flex", feature = "wgpu"))]

use burn::backend::{Autodiff, Flex, Wgpu};
use burn::module::{Module, Param};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{Distribution, Tensor};
use burn_deterministic::train::{
    enter_check_run, print_parameter_hash, record_gradients, CheckError, CheckReport,
    DeterminismCheck, TracedOptimizer,
};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::controls::deform_conv_grads;
use burn_deterministic_suite::wgpu_setup::test_device;

const CASE: &str = "BD_CHECK_CASE";

/// A learnable map upsampled bilinearly; trained with a full `sum()` loss.
#[derive(Module, Debug)]
struct Upsample<B: Backend> {
    coarse: Param<Tensor<B, 4>>,
}

fn train<B: AutodiffBackend>(device: &B::Device) -> Upsample<B> {
    B::seed(device, 11);
    let target = Tensor::<B, 4>::random([2, 3, 24, 24], Distribution::Default, device);
    let mut model = Upsample {
        coarse: Param::from_tensor(Tensor::random([2, 3, 6, 6], Distribution::Default, device)),
    };
    let mut optimizer = AdamConfig::new().init();
    let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
    for _ in 0..5 {
        let y = interpolate(model.coarse.val(), [24, 24], options.clone());
        let loss = (y - target.clone()).powi_scalar(2).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(0.05, model, grads);
    }
    model
}

/// A deformable convolution's weight and input, both learned: the input's gradient is the
/// plain wgpu deform input gradient (float atomics, drifting), the weight's a GEMM (fixed).
#[derive(Module, Debug)]
struct DeformNet<B: Backend> {
    weight: Param<Tensor<B, 4>>,
    features: Param<Tensor<B, 4>>,
}

/// Two SGD steps of [`DeformNet`] on plain `Autodiff<Wgpu>`, each step's gradients recorded for
/// the check's locator. Every sample is pulled onto one fractional point of the `[1, 2, 6, 6]`
/// input, so each of its four neighbours adds about 12 000 contributions; the loss is reduced
/// per axis (a full `sum()` would drift too).
fn train_deform(device: &burn::tensor::Device<Wgpu>, traced: bool) -> DeformNet<Autodiff<Wgpu>> {
    use burn::tensor::module::deform_conv2d;
    use burn::tensor::ops::DeformConvOptions;
    type B = Autodiff<Wgpu>;
    let (channels, size, kernel, padding) = (2, 6, 3, 16);
    let out = size + 2 * padding - (kernel - 1);
    let taps = kernel * kernel;
    let offsets: Vec<f32> =
        burn_deterministic_testkit::crowded_deform_offsets(kernel, out, padding, 2.3)
            .into_iter()
            .map(|offset| offset as f32)
            .collect();
    let offset =
        Tensor::<B, 1>::from_floats(offsets.as_slice(), device).reshape([1, 2 * taps, out, out]);
    B::seed(device, 5);
    let mut model = DeformNet::<B> {
        weight: Param::from_tensor(Tensor::random(
            [channels, channels, kernel, kernel],
            Distribution::Default,
            device,
        )),
        features: Param::from_tensor(Tensor::random(
            [1, channels, size, size],
            Distribution::Default,
            device,
        )),
    };
    let upstream = Tensor::<B, 4>::random([1, channels, out, out], Distribution::Default, device);
    let options = DeformConvOptions::new([1, 1], [padding, padding], [1, 1], 1, 1);
    let mut optimizer =
        TracedOptimizer::new(burn::optim::SgdConfig::new().init::<B, DeformNet<B>>());
    for step in 1..=2 {
        let (weight, features) = (model.weight.val(), model.features.val());
        let y = deform_conv2d(
            features.clone(),
            offset.clone(),
            weight.clone(),
            None,
            None,
            options.clone(),
        );
        let loss = (y * upstream.clone())
            .sum_dim(3)
            .sum_dim(2)
            .sum_dim(1)
            .sum_dim(0);
        let grads = loss.backward();
        if traced {
            // Burn's optimizer, wrapped: it records the gradients it is given.
            let grads = GradientsParams::from_grads(grads, &model);
            model = optimizer.step(0.01, model, grads);
            continue;
        }
        record_gradients(step, &model, &grads);
        let sgd = |p: Tensor<B, 4>| {
            let grad = p.grad(&grads).expect("a parameter has a gradient");
            Param::from_tensor(Tensor::from_inner(p.inner() - grad.mul_scalar(0.01)))
        };
        model = DeformNet {
            weight: sgd(weight),
            features: sgd(features),
        };
    }
    model
}

#[test]
#[ignore = "run by the other tests of this file in new processes"]
fn check_run() {
    enter_check_run();
    match std::env::var(CASE)
        .expect("run by the parent test")
        .as_str()
    {
        "decorated-flex" => {
            print_parameter_hash(&train::<Autodiff<DeterministicBackend<Flex>>>(
                &Default::default(),
            ));
        }
        "decorated-wgpu" => {
            print_parameter_hash(&train::<Autodiff<DeterministicBackend<Wgpu>>>(
                &test_device(),
            ));
        }
        "plain-deform-wgpu" => {
            let [x_grad, ..] = deform_conv_grads::<Autodiff<Wgpu>>(&test_device(), true);
            let control = Upsample::<Wgpu> {
                coarse: Param::from_tensor(x_grad),
            };
            print_parameter_hash(&control);
        }
        "deform-net-wgpu" => {
            print_parameter_hash(&train_deform(&test_device(), false));
        }
        "deform-net-traced-wgpu" => {
            print_parameter_hash(&train_deform(&test_device(), true));
        }
        other => panic!("unknown case {other}"),
    }
}

fn check(case: &str, runs: usize) -> Result<CheckReport, CheckError> {
    let args = [
        "--exact",
        "check_run",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ];
    DeterminismCheck::new(std::env::current_exe().unwrap(), args, runs)
        .with_env(CASE, case)
        .run()
}

#[test]
fn the_check_agrees_on_training_through_the_decorator() {
    for case in ["decorated-flex", "decorated-wgpu"] {
        let report = check(case, 3).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(report.hashes.len(), 3);
        assert!(report.hashes[0].len() == 64, "{report}");
        assert!(report.identical(), "{case}:\n{report}");
    }
}

/// The negative control: without it, a check that always agrees would pass the test above.
#[test]
fn the_check_catches_the_plain_deform_conv_drift() {
    let report = check("plain-deform-wgpu", 5).unwrap();
    assert!(!report.identical(), "the control did not drift:\n{report}");
    assert!(report.to_string().contains("FAILED"), "{report}");
}

#[test]
fn a_run_without_a_hash_line_is_an_error() {
    let report = DeterminismCheck::new(std::env::current_exe().unwrap(), ["--list"], 2).run();
    assert!(
        matches!(report, Err(CheckError::NoHash { run: 1 })),
        "{report:?}"
    );
}

/// The locator: when the only drifting op is the plain wgpu deformable convolution's input
/// gradient, the check names step 1 and the parameter feeding it, and that one only.
#[test]
fn the_check_names_the_first_step_and_parameter_that_differ() {
    for case in ["deform-net-wgpu", "deform-net-traced-wgpu"] {
        assert_located(case);
    }
}

/// `case` (a hand-written loop calling `record_gradients`, or Burn's optimizer wrapped in
/// `TracedOptimizer`) drifts, and the check says where.
fn assert_located(case: &str) {
    let report = check(case, 2).unwrap();
    assert!(
        !report.identical(),
        "the deform control did not drift:\n{report}"
    );
    let difference = report
        .first_difference
        .as_ref()
        .unwrap_or_else(|| panic!("not located:\n{report}"));
    assert_eq!(difference.step, 1, "{report}");
    assert_eq!(difference.parameter, "features", "{report}");
    assert_eq!(
        (difference.differing, difference.parameters),
        (1, 2),
        "{report}"
    );
    assert!(
        report
            .to_string()
            .contains("first difference: step 1, gradient of `features`"),
        "{report}"
    );
}

/// A deterministic run traces every step and reports no difference.
#[test]
fn an_agreeing_check_reports_no_difference() {
    let report = check("decorated-flex", 2).unwrap();
    assert!(report.identical(), "{report}");
    assert_eq!(report.first_difference, None);
    assert!(!report.to_string().contains("first difference"), "{report}");
}
