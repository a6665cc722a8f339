//! Rewrite policy and configuration: `never` is exactly the inner backend, excluded modes go to
//! the inner backend, scopes nest and unwind, the serde form is strict and documented.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::DType;
use burn_deterministic::config::{self, set_config};
use burn_deterministic::{
    with_config, ConfigError, DeterministicBackend, DeterministicConfig, ModeSet, RewritePolicy,
};
use burn_deterministic_suite::harness::{configured, panic_message, uniform, Resize};

fn problem(x: &[f64]) -> Resize<'_> {
    Resize {
        x,
        shape: [1, 2, 6, 5],
        output_size: [13, 9],
        options: InterpolateOptions::new(InterpolateMode::Bicubic).with_align_corners(false),
        dtype: DType::F32,
    }
}

#[test]
fn plain_backend_panics_on_bicubic_backward_and_decorator_trains() {
    let x = uniform(1, 60);
    let g = uniform(2, 2 * 13 * 9);
    let device = NdArrayDevice::Cpu;
    let native =
        std::panic::catch_unwind(|| problem(&x).forward_backward::<Autodiff<NdArray>>(&g, &device));
    assert!(panic_message(native).contains("bicubic interpolation backward is not supported"));
    let (_, dx) =
        problem(&x).forward_backward::<Autodiff<DeterministicBackend<NdArray>>>(&g, &device);
    assert!(dx.iter().all(|v| v.is_finite()) && dx.iter().any(|v| *v != 0.0));
}

#[test]
fn never_is_exactly_the_inner_backend() {
    let x = uniform(3, 60);
    let g = uniform(4, 2 * 13 * 9);
    let device = NdArrayDevice::Cpu;
    let never = DeterministicConfig::default().with_policy(RewritePolicy::Never);
    configured(never, || {
        let native = problem(&x).forward::<NdArray>(&device);
        let ours = problem(&x).forward::<DeterministicBackend<NdArray>>(&device);
        assert_eq!(ours.as_bytes(), native.as_bytes());
        // The scope covers `backward()` too: the native backward runs, and panics.
        let result = std::panic::catch_unwind(|| {
            problem(&x).forward_backward::<Autodiff<DeterministicBackend<NdArray>>>(&g, &device)
        });
        assert!(panic_message(result).contains("bicubic interpolation backward is not supported"));
    });
}

/// A mode left out of `modes` goes to `B` where `B` has its kernels (ndarray's nearest: its
/// bits), and stays the decorator's where `B` has no backward for it (ndarray's bicubic: it
/// trains, with the decorator's gradient, instead of panicking).
#[test]
fn a_mode_left_out_goes_to_the_inner_backend_where_it_has_the_kernels() {
    let x = uniform(5, 60);
    let g = uniform(6, 2 * 13 * 9);
    let device = NdArrayDevice::Cpu;
    let left_out = DeterministicConfig::default()
        .with_policy(RewritePolicy::Always)
        .with_modes(ModeSet {
            nearest: false,
            bicubic: false,
            ..ModeSet::all()
        });
    let taken_over = DeterministicConfig::default()
        .with_policy(RewritePolicy::Always)
        .with_modes(ModeSet::all());
    type Train = Autodiff<DeterministicBackend<NdArray>>;

    let nearest = Resize {
        options: InterpolateOptions::new(InterpolateMode::Nearest),
        ..problem(&x)
    };
    let native = nearest.forward_backward_data::<Autodiff<NdArray>>(&g, &device);
    let left = configured(left_out.clone(), || {
        nearest.forward_backward_data::<Train>(&g, &device)
    });
    assert_eq!(
        left.0.as_bytes(),
        native.0.as_bytes(),
        "nearest forward is not ndarray's"
    );
    assert_eq!(
        left.1.as_bytes(),
        native.1.as_bytes(),
        "nearest backward is not ndarray's"
    );

    let bicubic_left_out = configured(left_out, || {
        std::panic::catch_unwind(|| problem(&x).forward_backward::<Train>(&g, &device))
    })
    .expect("ndarray has no bicubic backward: the decorator keeps it");
    let bicubic_taken_over = configured(taken_over, || {
        problem(&x).forward_backward::<Train>(&g, &device)
    });
    assert_eq!(bicubic_left_out, bicubic_taken_over);
}

#[test]
fn outside_autodiff_the_forward_is_rewritten_even_on_cpu() {
    // `DeterministicBackend<Autodiff<_>>`: the inner backend records gradients, so the forward
    // must be matmuls (autodiff has no backward for the native bicubic); training works.
    let x = uniform(7, 60);
    let g = uniform(8, 2 * 13 * 9);
    let device = NdArrayDevice::Cpu;
    let (y, dx) =
        problem(&x).forward_backward::<DeterministicBackend<Autodiff<NdArray>>>(&g, &device);
    let (y_inside, dx_inside) =
        problem(&x).forward_backward::<Autodiff<DeterministicBackend<NdArray>>>(&g, &device);
    let close = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .all(|(a, b)| (a - b).abs() <= 1e-6 * (1.0 + b.abs()))
    };
    assert!(close(&y, &y_inside) && close(&dx, &dx_inside));
}

#[test]
fn scopes_nest_and_restore_after_a_panic() {
    let outer = DeterministicConfig::default().with_policy(RewritePolicy::Always);
    let inner = DeterministicConfig::default().with_policy(RewritePolicy::Never);
    configured(outer.clone(), || {
        assert_eq!(config::current(), outer);
        let result = std::panic::catch_unwind(|| {
            configured(inner.clone(), || {
                assert_eq!(config::current(), inner);
                panic!("boom");
            })
        });
        assert!(result.is_err());
        assert_eq!(config::current(), outer);
    });
}

#[test]
fn process_config_reaches_other_threads_and_scopes_win() {
    let process = DeterministicConfig::default().with_max_weight_bytes(12345);
    set_config(process.clone()).unwrap();
    let seen = std::thread::spawn(config::current).join().unwrap();
    assert_eq!(seen, process);
    let scoped = DeterministicConfig::default().with_max_weight_bytes(7);
    configured(scoped.clone(), || assert_eq!(config::current(), scoped));
    set_config(DeterministicConfig::default()).unwrap();
}

/// Invalid values are refused where a configuration is made, naming the field, and a refused
/// scope does not run its closure.
#[test]
fn invalid_configurations_are_refused_where_they_are_made() {
    let zero_blocks = DeterministicConfig::default().with_block_size(0);
    let mut ran = false;
    let refused = with_config(zero_blocks.clone(), || ran = true).unwrap_err();
    assert!(!ran, "the closure of a refused scope ran");
    assert!(matches!(
        refused,
        ConfigError::InvalidField {
            field: "block_size",
            ..
        }
    ));
    assert!(
        refused.to_string().contains("`block_size` is 0"),
        "{refused}"
    );
    assert_eq!(set_config(zero_blocks), Err(refused));

    let gain = DeterministicConfig::from_json(r#"{"banded_min_gain": -1.0}"#).unwrap_err();
    assert!(matches!(
        gain,
        ConfigError::InvalidField {
            field: "banded_min_gain",
            ..
        }
    ));
    // Nothing invalid reached the process configuration.
    assert!(config::current().block_size >= 1);
}

#[test]
fn config_serde_is_strict_and_fills_defaults() {
    let config =
        DeterministicConfig::from_json(r#"{"policy": "always", "modes": {"nearest": true}}"#)
            .unwrap();
    assert_eq!(config.policy, RewritePolicy::Always);
    assert!(config.modes.nearest && config.modes.bilinear && config.modes.bicubic);
    assert_eq!(
        config.max_weight_bytes,
        DeterministicConfig::default().max_weight_bytes
    );

    let err = DeterministicConfig::from_json(r#"{"polcy": "never"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `polcy`"), "{err}");
    let err = DeterministicConfig::from_json(r#"{"policy": "sometimes"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `sometimes`"), "{err}");

    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(DeterministicConfig::from_json(&json).unwrap(), config);

    let path = std::env::temp_dir().join(format!(
        "burn-deterministic-config-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, &json).unwrap();
    assert_eq!(DeterministicConfig::from_file(&path).unwrap(), config);
    std::fs::remove_file(&path).unwrap();
    let err = DeterministicConfig::from_file(&path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read burn-deterministic config"),
        "{err}"
    );
}

/// The environment variable is read in a child process, so this test's process stays clean.
#[test]
fn environment_variable_configures_the_process() {
    if std::env::var("BD_ENV_CHILD").is_ok() {
        let config = config::current();
        let _ = config::current(); // a second read reports nothing more
        println!(
            "POLICY={:?} NEAREST={}",
            config.policy, config.modes.nearest
        );
        if let Some(error) = config::environment_error() {
            println!("ENV_ERROR={error}");
        }
        return;
    }
    let run = |value: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "environment_variable_configures_the_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BD_ENV_CHILD", "1")
            .env(config::CONFIG_ENV_VAR, value)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, out) = run(r#"{"policy": "never", "modes": {"nearest": true}}"#);
    assert!(ok && out.contains("POLICY=Never NEAREST=true"), "{out}");
    // An invalid variable is reported once, naming the variable and the field, and the
    // process runs with the defaults; `environment_error` returns the same error.
    let (ok, out) = run(r#"{"block_size": 0, "policy": "never"}"#);
    assert!(ok, "{out}");
    assert!(out.contains("POLICY=Auto NEAREST=false"), "{out}");
    let report = "BURN_DETERMINISTIC_CONFIG: invalid burn-deterministic config: `block_size` is 0";
    assert_eq!(out.matches(report).count(), 2, "{out}"); // stderr once, ENV_ERROR= once
    let (ok, out) = run(r#"{"policy": 3}"#);
    assert!(ok && out.contains("POLICY=Auto"), "{out}");
    assert!(
        out.contains("BURN_DETERMINISTIC_CONFIG: invalid burn-deterministic config"),
        "{out}"
    );
}

/// Under `auto` on a CPU device the inference forward is `B`'s call and nothing else: weight
/// limits do not apply to it (it builds no weights). The backward, which needs the weights,
/// refuses with the decorator's message.
#[test]
fn the_native_cpu_forward_ignores_weight_limits() {
    use burn::tensor::module::interpolate;
    use burn::tensor::Tensor;
    let device = NdArrayDevice::Cpu;
    let tiny = DeterministicConfig::default().with_max_weight_bytes(1);
    let options = InterpolateOptions::new(InterpolateMode::Bilinear);
    let values = uniform(12, 64);
    let x =
        || burn::tensor::TensorData::new(values.iter().map(|v| *v as f32).collect(), [1, 1, 8, 8]);
    let native = interpolate(
        Tensor::<NdArray, 4>::from_data(x(), &device),
        [32, 32],
        options.clone(),
    );
    let ours = configured(tiny.clone(), || {
        interpolate(
            Tensor::<DeterministicBackend<NdArray>, 4>::from_data(x(), &device),
            [32, 32],
            options.clone(),
        )
    });
    assert_eq!(ours.into_data().as_bytes(), native.into_data().as_bytes());
    let training = std::panic::catch_unwind(|| {
        configured(tiny, || {
            type Train = Autodiff<DeterministicBackend<NdArray>>;
            let x = Tensor::<Train, 4>::from_data(x(), &device).require_grad();
            let y = interpolate(x.clone(), [32, 32], options.clone());
            y.sum().backward();
        })
    });
    let message = panic_message(training);
    assert!(
        message.contains("burn-deterministic interpolate: the height weights for 8 -> 32"),
        "{message}"
    );
}

/// A configuration that changes between forward and `backward()` (here: a scope around the
/// backward only, with `never` or the mode switched off) does not send the backward of a
/// resize the decorator took over to `B`'s kernel (which panics for bicubic on ndarray): it is
/// the decorator's adjoint of the same weights, bit for bit the one of an unchanged config.
#[test]
fn a_config_changed_before_backward_keeps_the_decorators_adjoint() {
    use burn::tensor::module::interpolate;
    use burn::tensor::Tensor;
    type Train = Autodiff<DeterministicBackend<NdArray>>;
    let device = NdArrayDevice::Cpu;
    let x = uniform(13, 60);
    let g = uniform(14, 2 * 13 * 9);
    let (_, expected) = problem(&x).forward_backward_data::<Train>(&g, &device);
    let never = DeterministicConfig::default().with_policy(RewritePolicy::Never);
    let bicubic_off = DeterministicConfig::default().with_modes(ModeSet {
        bicubic: false,
        ..Default::default()
    });
    for at_backward in [never, bicubic_off] {
        let p = problem(&x);
        let input =
            burn_deterministic_suite::harness::tensor::<Train, 4>(&x, p.shape, p.dtype, &device)
                .require_grad();
        let upstream = burn_deterministic_suite::harness::tensor::<Train, 4>(
            &g,
            p.output_shape(),
            p.dtype,
            &device,
        );
        let y: Tensor<Train, 4> = interpolate(input.clone(), p.output_size, p.options.clone());
        let grads = configured(at_backward.clone(), || (y * upstream).backward());
        let dx = input.grad(&grads).expect("a gradient");
        assert_eq!(
            dx.into_data().as_bytes(),
            expected.as_bytes(),
            "{at_backward:?}"
        );
    }
}

/// `with_config` is scoped to the calling thread: threads it spawns (burn-train's per-device
/// workers, rayon tasks) see the process configuration (`set_config`, or the environment
/// variable), which is how a configuration reaches them.
#[test]
fn a_scope_does_not_reach_spawned_threads() {
    let scoped = DeterministicConfig::default().with_max_weight_bytes(99);
    configured(scoped.clone(), || {
        assert_eq!(config::current(), scoped);
        let seen = std::thread::spawn(config::current).join().unwrap();
        assert_ne!(seen, scoped);
    });
}
