//! CubeCL autotune on Burn 0.22.1, as `burn_deterministic_tensor::autotune` handles it: detected
//! (against CubeCL's own log), announced once, refused under `strict`, and the cache pinned to a
//! directory that runs share.
//!
//! With Burn's default features CI runs this file alone (with the golden subset below): every
//! test holds in both builds: CI's (no `autotune`: every answer is "no hazard") and Burn's
//! default features (`--features burn/default`: fusion + autotune, where each answer flips).
//! Child processes start with an empty autotune cache unless the test pins one.

mod common;

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use burn_deterministic_tensor::autotune::{self, use_autotune_cache_dir, PinCacheError};
use burn_deterministic_tensor::{
    extension, interpolate, try_interpolate, with_config, DeterministicConfig, ResizeError,
    WeightLayout,
};
use burn_deterministic_testkit::{fresh_dir, walk};
use common::{
    bits_hash, check_golden, child_case, child_output_with, tensor, uniform, values, values_of,
    GoldenCase,
};

const HELPER: &str = "child_process_helper";
/// The directory a child pins its autotune cache to.
const PIN_DIR_ENV: &str = "BDT_PIN_DIR";
/// The phrase only the autotune notice prints.
const NOTICE: &str = "is built with CubeCL autotune";

#[test]
#[ignore = "run by the other tests in a child process"]
fn child_process_helper() {
    let Some(case) = child_case() else {
        return;
    };
    match case.as_str() {
        "announce" => announce_child(),
        "pinned" => {
            // Before any device: CubeCL reads its configuration once, at the first.
            let dir = std::env::var(PIN_DIR_ENV).expect("the parent names the directory");
            println!("PINNED={:?}", use_autotune_cache_dir(dir));
            println!("FINGERPRINT={}", training_step(&common::vulkan()));
        }
        other => panic!("unknown case {other}"),
    }
}

/// What the module says in a fresh process, after a resize on flex, a matmul large enough to be
/// tuned on wgpu, and two resizes there.
fn announce_child() {
    let device = common::vulkan();
    let verdict = |device: &Device| match autotune::check(device) {
        Ok(()) => "ok".to_string(),
        Err(hazard) => format!("hazard:{}", hazard.backend),
    };
    println!("COMPILED_IN={}", autotune::compiled_in());
    let flex = common::flex();
    println!("CHECK_FLEX={}", verdict(&flex));
    println!("CHECK_DEVICE={}", verdict(&device));
    let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([16, 16]);
    let x = |device: &Device| tensor(&uniform(4, 2 * 8 * 8), [1, 2, 8, 8], DType::F32, device);
    values(burn_deterministic_tensor::interpolate(
        x(&flex),
        options.clone(),
    ));
    eprintln!("AFTER_FLEX_RESIZE");
    let a = tensor(
        &uniform(5, 256 * 256),
        [1, 1, 256, 256],
        DType::F32,
        &device,
    );
    values(a.clone().matmul(a));
    for _ in 0..2 {
        values(burn_deterministic_tensor::interpolate(
            x(&device),
            options.clone(),
        ));
    }
}

/// One training-like step through both mechanisms on shapes autotune tunes (the resize's
/// matmuls, a reduction): the bits of the loss and the input gradient.
fn training_step(device: &Device) -> String {
    let x = tensor(
        &uniform(1, 2 * 3 * 24 * 32),
        [2, 3, 24, 32],
        DType::F32,
        device,
    )
    .require_grad();
    let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([61, 45]);
    let y = burn_deterministic_tensor::interpolate(x.clone(), options.clone());
    let y = y.clone() + burn_deterministic_tensor::extension::interpolate(x.clone(), options);
    let loss = (y.clone() * y).mean();
    let gradient = x.grad(&loss.backward()).expect("x has a gradient");
    bits_hash([loss.reshape([1, 1, 1, 1]), gradient])
}

fn resize_on(device: &Device) -> [Result<(), ResizeError>; 2] {
    let x = || tensor(&uniform(3, 2 * 5 * 7), [1, 2, 5, 7], DType::F32, device);
    let options = InterpolateOptions::new(InterpolateMode::Bicubic).with_output_size([9, 4]);
    [
        try_interpolate(x(), options.clone()).map(|y| assert_eq!(y.dims(), [1, 2, 9, 4])),
        burn_deterministic_tensor::extension::try_interpolate(x(), options)
            .map(|y| assert_eq!(y.dims(), [1, 2, 9, 4])),
    ]
}

/// `autotune::compiled_in` and `check` against what CubeCL itself reports (its autotune log,
/// on stderr in a child with an empty cache: "Fastest result" for every tuned kernel), and the
/// notice: printed once, at the first resize on the autotuned device, never for flex.
#[test]
fn check_agrees_with_cubecl_and_the_notice_is_printed_once() {
    let (succeeded, stdout, stderr) =
        child_output_with(HELPER, "announce", &[("CUBECL_DEBUG_LOG", "stderr")]);
    // Kernel sources fill the log: show its end only.
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    assert!(succeeded, "child failed:\n{stdout}\n…{tail}");
    assert!(
        stderr.contains("[START_KERNEL_COMPILATION]"),
        "CubeCL logged no kernel compilation to stderr: its autotune log cannot be read\n{tail}"
    );
    let tuned = stderr.contains("Fastest result");
    let compiled_in: bool = values_of(&stdout, "COMPILED_IN")[0]
        .parse()
        .expect("a bool");
    assert_eq!(compiled_in, tuned, "CubeCL autotuned: {tuned}");
    assert_eq!(values_of(&stdout, "CHECK_FLEX"), ["ok"]);
    let device_verdict = &values_of(&stdout, "CHECK_DEVICE")[0];
    assert_eq!(
        // e.g. `dispatch<autodiff<fusion<cubecl<wgpu<wgsl>>>>>` (measured, default features)
        device_verdict.starts_with("hazard:") && device_verdict.contains("cubecl<"),
        tuned,
        "{device_verdict}"
    );
    let notices: Vec<&str> = stderr.lines().filter(|l| l.contains(NOTICE)).collect();
    assert_eq!(notices.len(), usize::from(tuned), "{notices:?}");
    if tuned {
        assert!(
            notices[0].starts_with("burn-deterministic-tensor: "),
            "{notices:?}"
        );
        let after_flex = stderr
            .find("AFTER_FLEX_RESIZE")
            .expect("the child's marker");
        assert!(stderr.find(NOTICE).expect("the notice") > after_flex);
        assert!(stderr.contains("burn_deterministic_tensor::autotune::use_autotune_cache_dir"));
    }
    eprintln!("autotune in this build: {tuned}");
}

/// Under `strict`, both mechanisms refuse a resize on an autotuned device (before any kernel
/// runs) and accept one on flex and on a wgpu build without autotune; without `strict` both run.
#[test]
fn strict_refuses_exactly_an_autotuned_device() {
    let strict = DeterministicConfig::default().with_strict(true);
    let wgpu = common::vulkan();
    let refused = with_config(strict.clone(), || resize_on(&wgpu)).expect("a valid configuration");
    for outcome in refused {
        match outcome {
            Err(ResizeError::Autotuned(hazard)) => {
                assert!(
                    autotune::compiled_in(),
                    "refused without autotune: {hazard}"
                );
                assert!(hazard.backend.contains("cubecl<"), "{hazard}");
                assert!(hazard.to_string().contains("strict"), "{hazard}");
            }
            Ok(()) => assert!(
                !autotune::compiled_in(),
                "strict let an autotuned device run"
            ),
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    let on_flex = with_config(strict, || resize_on(&common::flex())).expect("valid");
    assert_eq!(on_flex, [Ok(()), Ok(())]);
    assert_eq!(resize_on(&wgpu), [Ok(()), Ok(())], "without strict");
}

/// The pinned directory receives CubeCL's tuning results in an autotune build, and two fresh
/// processes that share it compute the same bits (the second reads the first's choices). A
/// second pin in one process is refused.
#[test]
fn a_pinned_cache_is_filled_and_shared() {
    let dir = fresh_dir("pinned-cache");
    let run = || {
        let env = [
            (PIN_DIR_ENV, dir.to_str().expect("a UTF-8 path")),
            // The persistent cache on (the children are otherwise started without it).
            ("CUBECL_AUTOTUNE_CACHE", "1"),
        ];
        let (succeeded, stdout, stderr) = child_output_with(HELPER, "pinned", &env);
        assert!(succeeded, "child failed:\n{stdout}\n{stderr}");
        assert_eq!(values_of(&stdout, "PINNED"), ["Ok(())"]);
        values_of(&stdout, "FINGERPRINT")[0].clone()
    };
    let first = run();
    let files = walk(&dir);
    // Only an autotuning build persists anything there (3 files measured with Burn's defaults).
    assert_eq!(
        !files.is_empty(),
        autotune::compiled_in(),
        "files in the pinned cache {dir:?}: {files:?}"
    );
    assert_eq!(run(), first, "two processes reading one cache");
    eprintln!("pinned cache: {} files", files.len());
}

/// The batched f32 golden cases (every mode, both alignments; up, down and mixed sizes) on wgpu
/// through mechanism (a), and (b) with dense and banded adjoints: the golden subset of CI's
/// step with Burn's default features, where every matmul is autotuned and fused.
#[test]
fn golden_batched_f32_cases_on_wgpu_through_both_mechanisms() {
    let batched = |case: &GoldenCase| case.is_f32() && case.name.contains("_b2c3_");
    let device = common::vulkan();
    assert_eq!(check_golden(&device, interpolate, batched), 16);
    assert_eq!(check_golden(&device, extension::interpolate, batched), 16);
    let banded = |x, options| {
        let blocks_of_3 = DeterministicConfig::default()
            .with_layout(WeightLayout::Banded)
            .with_block_size(3);
        with_config(blocks_of_3, || extension::interpolate(x, options)).expect("valid")
    };
    assert_eq!(check_golden(&device, banded, batched), 16);
}

/// CubeCL's configuration cannot change once a device read it: pinning then is an error, not
/// a silent no-op.
#[test]
fn pinning_after_first_use_is_refused() {
    values(Tensor::<1>::ones([4], &common::vulkan()));
    let dir = fresh_dir("late-pin");
    assert_eq!(
        use_autotune_cache_dir(dir.to_path_buf()),
        Err(PinCacheError::AlreadyConfigured)
    );
}
