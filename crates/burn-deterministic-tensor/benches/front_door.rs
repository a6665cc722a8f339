//! Mechanisms (a) (`a_matmul`) and, with the `extension-*` features, (b) (`b_extension`) against
//! Burn 0.22.1's own kernels, in the same run: a 4× upsample of
//! segmentation logits `[2, 19, 32, 32] → [128, 128]`, f32, bilinear and bicubic, on flex (CPU)
//! and wgpu (Vulkan; llvmpipe without a GPU).
//!
//! - `forward`: `burn::tensor::module::interpolate` vs this crate's.
//! - `forward_backward`: `sum(y · g)` and its gradient. Burn's own backward exists only on
//!   flex (CubeCL panics), so on wgpu the baseline is Burn's forward alone: the ratio says what a
//!   whole training step's resize costs against a native forward.
//!
//! ```sh
//! cargo bench -p burn-deterministic-tensor --all-features --bench front_door
//! BENCH_QUICK=1 cargo bench --profile dev -p burn-deterministic-tensor --all-features --bench front_door
//! ```
//!
//! - `adjoint_layouts` (with the `extension-*` features): mechanism (b)'s backward with the dense
//!   and the banded adjoint on 4× bilinear upsamples of 64-, 128- and 256-wide axes (the same
//!   number of output elements each: `[1, 64, 64, 64] → [256, 256]` to
//!   `[1, 4, 256, 256] → [1024, 1024]`), against the same baselines: where the band starts to pay.
//!
//! At the end it prints every `mechanism / burn` ratio of medians, read from criterion's own
//! estimates of this run, and banded / dense.

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Device, Tensor};
use criterion::Criterion;
// The tests' helpers (inputs from a seeded LCG, in a dtype on a device).
#[path = "../tests/common/mod.rs"]
mod common;
use common::{tensor, uniform};

const SHAPE: [usize; 4] = [2, 19, 32, 32];
const OUTPUT: [usize; 2] = [128, 128];
const MODES: [(&str, InterpolateMode); 2] = [
    ("bilinear", InterpolateMode::Bilinear),
    ("bicubic", InterpolateMode::Bicubic),
];

type Resize = fn(Tensor<4>, InterpolateOptions) -> Tensor<4>;

fn bench_device(c: &mut Criterion, name: &str, device: &Device) {
    let [n, ch, _, _] = SHAPE;
    let output_shape = [n, ch, OUTPUT[0], OUTPUT[1]];
    let x = tensor(
        &uniform(1, SHAPE.iter().product()),
        SHAPE,
        DType::F32,
        device,
    );
    let g = tensor(
        &uniform(2, output_shape.iter().product()),
        output_shape,
        DType::F32,
        device,
    );
    let (x_ad, g_ad) = (x.clone().autodiff(), g.clone().autodiff());
    let burn: Resize = burn::tensor::module::interpolate;
    let ours = mechanisms();
    for (mode_name, mode) in MODES {
        let options = InterpolateOptions::new(mode)
            .with_align_corners(false)
            .with_output_size(OUTPUT);
        let mut group = c.benchmark_group(format!("forward/{name}/{mode_name}"));
        for (label, resize) in [("burn", burn)].into_iter().chain(ours.clone()) {
            group.bench_function(label, |b| {
                b.iter(|| {
                    let y = resize(x.clone(), options.clone());
                    device.sync().expect("device sync");
                    y
                })
            });
        }
        group.finish();

        let mut group = c.benchmark_group(format!("forward_backward/{name}/{mode_name}"));
        let step = |resize: Resize| {
            let x = x_ad.clone().require_grad();
            let y = resize(x.clone(), options.clone());
            let gradients = (y * g_ad.clone()).sum().backward();
            let dx = x.grad(&gradients).expect("x grad");
            device.sync().expect("device sync");
            dx
        };
        if name == "flex" {
            group.bench_function("burn", |b| b.iter(|| step(burn)));
        } else {
            // No backward in Burn here: the baseline is its forward.
            group.bench_function("burn_forward_only", |b| {
                b.iter(|| {
                    let y = burn(x.clone(), options.clone());
                    device.sync().expect("device sync");
                    y
                })
            });
        }
        for (label, resize) in ours.clone() {
            group.bench_function(label, |b| b.iter(|| step(resize)));
        }
        group.finish();
    }
}

/// Mechanism (b)'s adjoint layouts on a 4× bilinear upsample of `size`-wide axes (see the module
/// docs), forward + backward. The planes shrink as the axes grow (`4 · (256 / size)²` of them),
/// so every size moves the same number of output elements and only the axis length, hence the
/// band's saving of multiply-adds, changes.
#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
fn bench_adjoint_layouts(c: &mut Criterion, name: &str, device: &Device, size: usize) {
    use burn_deterministic_tensor::extension::try_interpolate;
    use burn_deterministic_tensor::{with_config, DeterministicConfig, WeightLayout};
    let planes = layout_planes(size);
    let x = tensor(
        &uniform(3, planes * size * size),
        [1, planes, size, size],
        DType::F32,
        device,
    )
    .autodiff();
    let g = tensor(
        &uniform(4, planes * 16 * size * size),
        [1, planes, 4 * size, 4 * size],
        DType::F32,
        device,
    )
    .autodiff();
    let options =
        InterpolateOptions::new(InterpolateMode::Bilinear).with_output_size([4 * size, 4 * size]);
    let dense: Resize = |x, options| {
        let dense = DeterministicConfig::default().with_layout(WeightLayout::Dense);
        with_config(dense, || try_interpolate(x, options))
            .expect("a valid configuration")
            .expect("a valid resize")
    };
    let banded: Resize = |x, options| {
        let banded = DeterministicConfig::default()
            .with_layout(WeightLayout::Banded)
            .with_block_size(layout_block());
        with_config(banded, || try_interpolate(x, options))
            .expect("a valid configuration")
            .expect("a valid resize")
    };
    let step = |resize: Resize| {
        let x = x.clone().require_grad();
        let y = resize(x.clone(), options.clone());
        let dx = x.grad(&(y * g.clone()).sum().backward()).expect("x grad");
        device.sync().expect("device sync");
        dx
    };
    let mut group = c.benchmark_group(layout_group(name, size));
    if name == "flex" {
        group.bench_function("burn", |b| {
            b.iter(|| step(burn::tensor::module::interpolate))
        });
    } else {
        let x = x.clone().inner();
        group.bench_function("burn_forward_only", |b| {
            b.iter(|| {
                let y = burn::tensor::module::interpolate(x.clone(), options.clone());
                device.sync().expect("device sync");
                y
            })
        });
    }
    group.bench_function("a_matmul", |b| {
        b.iter(|| step(burn_deterministic_tensor::interpolate))
    });
    group.bench_function("b_dense", |b| b.iter(|| step(dense)));
    group.bench_function("b_banded", |b| b.iter(|| step(banded)));
    group.finish();
}

/// The axis sizes of `adjoint_layouts` (each upsampled 4×): the band saves 3.0×, 6.4× and
/// 12.8× the dense multiply-adds there (printed with the ratios).
#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
const LAYOUT_SIZES: [usize; 3] = [64, 128, 256];

/// Outputs per block of the banded adjoint in `adjoint_layouts`: the blocks `Auto` uses.
#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
fn layout_block() -> usize {
    burn_deterministic_core::BandPolicy::adjoint().block_size
}

/// Planes of the `adjoint_layouts` input with `size`-wide axes.
#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
fn layout_planes(size: usize) -> usize {
    4 * (256 / size).pow(2)
}

#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
fn layout_group(name: &str, size: usize) -> String {
    format!("adjoint_layouts/{name}/bilinear_{size}to{}", 4 * size)
}

/// This crate's mechanisms: (a) always, (b) with the `extension-*` features.
fn mechanisms() -> Vec<(&'static str, Resize)> {
    let a: (&'static str, Resize) = ("a_matmul", burn_deterministic_tensor::interpolate);
    #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
    return vec![
        a,
        (
            "b_extension",
            burn_deterministic_tensor::extension::interpolate,
        ),
    ];
    #[cfg(not(all(feature = "extension-flex", feature = "extension-wgpu")))]
    vec![a]
}

/// One line: `label`'s median, `baseline`'s, and their ratio, when both ran.
fn print_ratio(group: &str, label: &str, baseline: &str) {
    if let (Some(theirs), Some(ours)) = (
        common::bench_median(group, baseline),
        common::bench_median(group, label),
    ) {
        println!(
            "{group:34} {label:11} {:9.3} ms  {baseline:17} {:9.3} ms  ×{:.2}",
            ours * 1e3,
            theirs * 1e3,
            ours / theirs
        );
    }
}

fn print_ratios() {
    println!("\nmechanism / burn (medians of this run; < 1: this crate is faster)");
    for name in ["flex", "wgpu"] {
        for (mode, _) in MODES {
            for (kind, baseline) in [
                ("forward", "burn"),
                ("forward_backward", "burn"),
                ("forward_backward", "burn_forward_only"),
            ] {
                let group = format!("{kind}/{name}/{mode}");
                for (label, _) in mechanisms() {
                    print_ratio(&group, label, baseline);
                }
            }
        }
    }
}

/// The `adjoint_layouts` ratios: each against Burn's baseline, and banded / dense next to the
/// band's saving of multiply-adds on that axis (the engine's cost model).
#[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
fn print_layout_ratios() {
    use burn_deterministic_core::{AxisEstimate, Layout, Mode, Resampling};
    println!("\nadjoint layouts (medians of this run)");
    for name in ["flex", "wgpu"] {
        for size in LAYOUT_SIZES {
            let group = layout_group(name, size);
            for baseline in ["burn", "burn_forward_only"] {
                for label in ["a_matmul", "b_dense", "b_banded"] {
                    print_ratio(&group, label, baseline);
                }
            }
            let resampling = Resampling {
                mode: Mode::Bilinear,
                align_corners: false,
            };
            let estimate = AxisEstimate::new(size, 4 * size, resampling).expect("a small axis");
            let macs = |layout| estimate.cost(layout, 4).macs as f64;
            let saving = macs(Layout::Dense)
                / macs(Layout::Banded {
                    block_size: layout_block(),
                });
            if let (Some(dense), Some(banded)) = (
                common::bench_median(&group, "b_dense"),
                common::bench_median(&group, "b_banded"),
            ) {
                println!(
                    "{group:34} b_banded / b_dense ×{:.2}  (band saves {saving:.1}× the multiply-adds)",
                    banded / dense
                );
            }
        }
    }
}

fn main() {
    let mut c = common::bench_criterion();
    bench_device(&mut c, "flex", &Device::flex());
    let wgpu = common::vulkan_without_autodiff();
    bench_device(&mut c, "wgpu", &wgpu);
    #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
    for (name, device) in [("flex", Device::flex()), ("wgpu", wgpu.clone())] {
        for size in LAYOUT_SIZES {
            bench_adjoint_layouts(&mut c, name, &device, size);
        }
    }
    c.final_summary();
    print_ratios();
    #[cfg(all(feature = "extension-flex", feature = "extension-wgpu"))]
    print_layout_ratios();
}
