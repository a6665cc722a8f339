//! What the crate's bookkeeping costs a training step, outside a check run, in the same run on
//! flex (CPU), f32:
//!
//! - `step`: one SGD step of a two-layer MLP (`[64, 256] → 512 → 10`, a fixed-order mean loss);
//! - `step_with_record_gradients`: the same step calling `train::record_gradients` (a no-op
//!   outside the runs the fresh-process check starts: one atomic read);
//! - `report_counts`: the report's counting for one step of such a model (8 counts; one lock
//!   each), alone.
//!
//! ```sh
//! cargo bench -p burn-deterministic-tensor --all-features --bench bookkeeping
//! ```
//!
//! At the end it prints each as a fraction of `step`.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{activation, Device, Distribution, Tensor};
use burn_deterministic_tensor::{fixed_order, report, train};

#[path = "../tests/common/mod.rs"]
mod common;

#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    out: Linear,
}

fn step(model: Mlp, input: &Tensor<2>, record: bool) -> Mlp {
    let hidden = activation::relu(model.hidden.forward(input.clone()));
    let loss = fixed_order::mean(model.out.forward(hidden).square());
    let grads = loss.backward();
    if record {
        train::record_gradients(1, &model, &grads);
    }
    // Plain SGD through Burn's own mapper would need burn-optim: the step's cost without it is
    // the forward and backward, which this compares against.
    model
}

fn main() {
    let mut c = common::bench_criterion();
    let device = Device::flex().autodiff();
    let model = Mlp {
        hidden: LinearConfig::new(256, 512).init(&device),
        out: LinearConfig::new(512, 10).init(&device),
    };
    let input = Tensor::<2>::random([64, 256], Distribution::Default, &device);
    let mut group = c.benchmark_group("bookkeeping/flex");
    group.bench_function("step", |b| b.iter(|| step(model.clone(), &input, false)));
    group.bench_function("step_with_record_gradients", |b| {
        b.iter(|| step(model.clone(), &input, true))
    });
    group.bench_function("report_counts", |b| {
        b.iter(|| {
            for _ in 0..8 {
                report::record_for_benchmark(&device);
            }
        })
    });
    group.finish();
    c.final_summary();

    let median = |id| common::bench_median("bookkeeping/flex", id);
    if let (Some(plain), Some(recorded), Some(counts)) = (
        median("step"),
        median("step_with_record_gradients"),
        median("report_counts"),
    ) {
        println!("\nbookkeeping against one step (medians of this run)");
        println!("step                         {:10.3} ms", plain * 1e3);
        println!(
            "step with record_gradients   {:10.3} ms  ×{:.4}",
            recorded * 1e3,
            recorded / plain
        );
        println!(
            "report counts of one step    {:10.3} µs  {:.1e} of a step",
            counts * 1e6,
            counts / plain
        );
    }
}
