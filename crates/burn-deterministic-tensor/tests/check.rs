//! The fresh-process determinism check on Burn 0.22.1 (feature `train`): a small training that
//! only uses fixed-order ops gives one parameter hash in two new processes on flex and on wgpu
//! (Vulkan; llvmpipe without a GPU), and the check says so; the same training with Burn's own
//! `gather` (whose backward scatter-adds with float atomics on wgpu) gives two hashes, and the
//! check fails, and names step 1 and the table's gradient as where the runs first differ: its
//! negative control, and the locator's.

mod common;

use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_deterministic_tensor::fixed_order;
use burn_deterministic_tensor::train::{
    parameter_hash, print_parameter_hash, record_gradients, CheckError, DeterminismCheck,
    AUTOTUNE_CACHE_ENV,
};
use burn_deterministic_testkit::child::CASE_ENV;
use common::uniform;

const HELPER: &str = "child_process_helper";

/// A scale and a table of 64 × 8 embeddings; each step gathers the table at 256 Ki indices
/// (every row thousands of times), scales the rows, and pulls them towards a target by plain
/// SGD. Only the table's gradient goes through the gather's backward; the scale's is a
/// fixed-order sum either way.
#[derive(Module, Debug)]
struct Table {
    scale: Param<Tensor<1>>,
    rows: Param<Tensor<2>>,
}

fn train(device: &Device, fixed: bool) -> Table {
    let mut rows = Tensor::<2>::from_data(TensorData::new(uniform(1, 64 * 8), [64, 8]), device);
    let mut scale = Tensor::<1>::ones([8], device);
    let n = 1 << 18;
    let spread: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 64).collect();
    let indices =
        Tensor::<2, Int>::from_data(TensorData::new(spread, [n, 1]), device).expand([n, 8]);
    let target = Tensor::<2>::from_data(TensorData::new(uniform(2, n * 8), [n, 8]), device);
    for step in 1..=3 {
        let table = Table {
            scale: Param::from_tensor(scale),
            rows: Param::from_tensor(rows),
        };
        let (s, r) = (table.scale.val(), table.rows.val());
        let gathered = match fixed {
            true => fixed_order::gather(r.clone(), 0, indices.clone()),
            false => r.clone().gather(0, indices.clone()),
        };
        let scaled = gathered * s.clone().unsqueeze::<2>();
        let loss = fixed_order::mean((scaled - target.clone()).square());
        let grads = loss.backward();
        record_gradients(step, &table, &grads);
        let rows_grad = r.grad(&grads).expect("the rows have a gradient");
        let scale_grad = s.grad(&grads).expect("the scale has a gradient");
        rows = (r.inner() - rows_grad.mul_scalar(100.0)).autodiff();
        scale = (s.inner() - scale_grad).autodiff();
    }
    Table {
        scale: Param::from_tensor(scale),
        rows: Param::from_tensor(rows),
    }
}

#[test]
#[ignore = "run by the other tests in a child process"]
fn child_process_helper() {
    let Some((device, kind)) = common::child_device_and_case() else {
        return;
    };
    print_parameter_hash(&train(&device, kind == "fixed"));
}

/// The check as a training program runs it: this test binary's helper in 2 new processes.
fn check(case: &str) -> burn_deterministic_tensor::train::CheckReport {
    let exe = std::env::current_exe().expect("the test binary");
    let (key, value) = AUTOTUNE_CACHE_ENV;
    DeterminismCheck::new(exe, ["--exact", HELPER, "--ignored", "--nocapture"], 2)
        .with_env(CASE_ENV, case)
        .with_env(key, value)
        .run()
        .unwrap_or_else(|error| panic!("{case}: {error}"))
}

#[test]
fn a_fixed_order_training_passes_the_check_on_flex_and_wgpu() {
    for case in ["flex/fixed", "wgpu/fixed"] {
        let report = check(case);
        assert!(report.identical(), "{case}: {report}");
        assert!(report.traced, "{case}: the runs traced no step");
        assert_eq!(report.first_difference, None, "{case}");
        assert!(report.to_string().contains("determinism check passed"));
    }
}

#[test]
fn the_check_fails_a_training_through_burns_atomic_gather_backward_on_wgpu() {
    let report = check("wgpu/burn");
    assert!(
        !report.identical(),
        "Burn's gather backward gave one hash in 2 processes: the control cannot fail"
    );
    let text = report.to_string();
    assert!(text.contains("determinism check FAILED"), "{text}");
    assert_ne!(report.exit_code(), std::process::ExitCode::SUCCESS);
    // The locator names the step and the one parameter whose gradient went through it.
    let difference = report
        .first_difference
        .as_ref()
        .unwrap_or_else(|| panic!("the check did not locate the difference:\n{text}"));
    assert_eq!(difference.step, 1, "{text}");
    assert_eq!(difference.parameter, "rows", "{text}");
    assert_eq!(
        (difference.differing, difference.parameters),
        (1, 2),
        "{text}"
    );
    assert!(
        text.contains("first difference: step 1, gradient of `rows` (1 of 2 parameters"),
        "{text}"
    );
}

#[test]
fn a_run_that_prints_no_hash_is_an_error_not_a_pass() {
    let exe = std::env::current_exe().expect("the test binary");
    let outcome = DeterminismCheck::new(exe, ["--list"], 2).run();
    assert!(
        matches!(outcome, Err(CheckError::NoHash { run: 1 })),
        "{outcome:?}"
    );
}

#[test]
fn the_hash_covers_every_float_parameter_bit_for_bit() {
    let device = common::flex();
    let table = train(&device, true);
    let hash = parameter_hash(&table);
    assert_eq!(hash, parameter_hash(&table.clone()));
    let nudged = table.rows.val().inner().add_scalar(1e-3).autodiff();
    let other = Table {
        scale: table.scale.clone(),
        rows: Param::from_tensor(nudged),
    };
    assert_ne!(
        hash,
        parameter_hash(&other),
        "a changed parameter kept its hash"
    );
}
