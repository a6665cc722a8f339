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
    enter_check_run, print_parameter_hash, CheckError, CheckReport, DeterminismCheck,
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
