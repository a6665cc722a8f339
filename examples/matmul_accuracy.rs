//! How far the decorator's matmul forward is from the backend's native interpolate kernel, on the
//! benchmark shapes (a)–(e), in f32 on the chosen backend. On CUDA this shows whether the matmul
//! ran with TF32 tensor cores (errors near 1e-3 instead of 1e-6).
//!
//! ```text
//! cargo run --release --example matmul_accuracy --features cuda -- --backend cuda
//! ```

use burn::tensor::backend::Backend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Tensor};
use burn_deterministic::{DeterministicBackend, DeterministicConfig, ModeSet, RewritePolicy};
use burn_deterministic_suite::example_support::devices::BackendChoice;
use burn_deterministic_suite::harness::{configured, tensor, to_f64, uniform};
use burn_deterministic_suite::metrics::max_scaled_error;
use clap::Parser;
use std::collections::BTreeMap;

#[derive(Parser)]
struct Args {
    #[arg(long, value_enum, default_value_t = BackendChoice::Flex)]
    backend: BackendChoice,
}

/// Name, input `[N, C, H, W]`, output `[H', W']`, bicubic (else bilinear), align_corners.
type Case = (&'static str, [usize; 4], [usize; 2], bool, bool);

const SHAPES: [Case; 5] = [
    ("a_seg_logits", [4, 19, 128, 128], [512, 512], false, false),
    ("b_depth", [8, 1, 120, 160], [480, 640], false, true),
    ("c_proto", [4, 32, 160, 160], [640, 640], false, false),
    ("d_fpn_step", [8, 64, 30, 40], [60, 80], false, true),
    ("e_bicubic", [4, 3, 256, 256], [512, 512], true, false),
];

fn policy(policy: RewritePolicy) -> DeterministicConfig {
    DeterministicConfig::default()
        .with_policy(policy)
        .with_modes(ModeSet::all())
}

/// The largest scaled error of the matmul forward against `B`'s kernel, per shape. The
/// decorator's own backend type carries both paths: policy `never` is exactly the inner kernel,
/// policy `always` the matmuls.
fn errors<B: Backend>(device: &B::Device) -> BTreeMap<&'static str, f64> {
    let mut errors = BTreeMap::new();
    for (name, input, output, bicubic, align_corners) in SHAPES {
        let mode = if bicubic {
            InterpolateMode::Bicubic
        } else {
            InterpolateMode::Bilinear
        };
        let options = InterpolateOptions::new(mode).with_align_corners(align_corners);
        let x: Tensor<DeterministicBackend<B>, 4> = tensor(
            &uniform(7, input.iter().product()),
            input,
            DType::F32,
            device,
        );
        let resize = |p| {
            configured(policy(p), || {
                to_f64(interpolate(x.clone(), output, options.clone()).into_data())
            })
        };
        let native = resize(RewritePolicy::Never);
        let matmul = resize(RewritePolicy::Always);
        let error = max_scaled_error(&matmul, &native);
        println!("{name:<14} max |matmul - native| / (1 + |native|) = {error:.2e}");
        errors.insert(name, error);
    }
    errors
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let errors = match args.backend {
        #[cfg(feature = "flex")]
        BackendChoice::Flex => errors::<burn::backend::Flex>(&Default::default()),
        #[cfg(feature = "ndarray")]
        BackendChoice::Ndarray => errors::<burn::backend::NdArray>(&Default::default()),
        #[cfg(feature = "wgpu")]
        BackendChoice::Wgpu => {
            match burn_deterministic_suite::example_support::devices::wgpu_devices(1) {
                Ok(devices) => errors::<burn::backend::Wgpu>(&devices[0]),
                Err(message) => {
                    eprintln!("error: {message}");
                    return std::process::ExitCode::from(2);
                }
            }
        }
        #[cfg(feature = "cuda")]
        BackendChoice::Cuda => errors::<burn::backend::Cuda>(&Default::default()),
        #[allow(unreachable_patterns)]
        other => {
            eprintln!("error: {}", other.missing_feature());
            return std::process::ExitCode::from(2);
        }
    };
    let worst = errors.values().fold(0.0f64, |a, &b| a.max(b));
    println!(
        "{}: worst f32 error of the matmul forward vs the native kernel: {worst:.2e}",
        args.backend.name()
    );
    std::process::ExitCode::SUCCESS
}
