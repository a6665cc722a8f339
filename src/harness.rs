//! Small helpers to run one resize on any backend and read the result back as f64.

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::interpolate;
use burn::tensor::ops::InterpolateOptions;
use burn::tensor::{DType, Tensor, TensorData};

/// One resize problem: `x` (row-major NCHW values) resized to `output_size`.
#[derive(Debug, Clone)]
pub struct Resize<'a> {
    pub x: &'a [f64],
    pub shape: [usize; 4],
    pub output_size: [usize; 2],
    pub options: InterpolateOptions,
    pub dtype: DType,
}

impl Resize<'_> {
    pub fn output_shape(&self) -> [usize; 4] {
        [
            self.shape[0],
            self.shape[1],
            self.output_size[0],
            self.output_size[1],
        ]
    }

    /// The forward output on `B`.
    pub fn forward<B: Backend>(&self, device: &B::Device) -> TensorData {
        let x: Tensor<B, 4> = tensor(self.x, self.shape, self.dtype, device);
        interpolate(x, self.output_size, self.options.clone()).into_data()
    }

    /// `(y, dx)` on autodiff backend `B`, where `dx = ∂ sum(y · g)/∂x`.
    pub fn forward_backward<B: AutodiffBackend>(
        &self,
        g: &[f64],
        device: &B::Device,
    ) -> (Vec<f64>, Vec<f64>) {
        let (y, dx) = self.forward_backward_data::<B>(g, device);
        (to_f64(y), to_f64(dx))
    }

    /// Like [`Self::forward_backward`], keeping the backend's own dtype (for bit comparisons).
    pub fn forward_backward_data<B: AutodiffBackend>(
        &self,
        g: &[f64],
        device: &B::Device,
    ) -> (TensorData, TensorData) {
        let x: Tensor<B, 4> = tensor(self.x, self.shape, self.dtype, device).require_grad();
        let g: Tensor<B, 4> = tensor(g, self.output_shape(), self.dtype, device);
        let y = interpolate(x.clone(), self.output_size, self.options.clone());
        // Seeding backward with `y · g` (not its sum) gives dL/dy = g without a full reduction,
        // whose float atomics on CubeCL would add run-to-run noise of their own.
        let grads = (y.clone() * g).backward();
        let dx = x.grad(&grads).expect("x has a gradient");
        (y.into_data(), dx.into_data())
    }
}

/// A tensor of `dtype` on `device` from f64 values.
pub fn tensor<B: Backend, const D: usize>(
    values: &[f64],
    shape: [usize; D],
    dtype: DType,
    device: &B::Device,
) -> Tensor<B, D> {
    let data = TensorData::new(values.to_vec(), shape).convert_dtype(dtype);
    Tensor::from_data(data, (device, dtype))
}

/// Tensor data as f64 values.
pub fn to_f64(data: TensorData) -> Vec<f64> {
    data.convert::<f64>().to_vec::<f64>().expect("float data")
}

/// `n` reproducible values, uniform in `[-1, 1)`, from `seed` (SplitMix64: no dependency on any
/// backend's random generator, so every backend sees the same input).
pub fn uniform(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// The message of a caught panic (`String` or `&str` payload), empty otherwise.
pub fn panic_message(result: std::thread::Result<impl Sized>) -> String {
    payload_message(&*result.err().expect("expected a panic")).unwrap_or_default()
}

/// The message a panic payload carries, if it is a `String` or a `&str`.
pub fn payload_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

/// What [`fit_bilinear_upsample`] ends with: the loss of every step and the SHA-256 of the
/// final parameter's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub losses: Vec<f32>,
    pub parameter_sha256: String,
}

/// Fits a `[1, 2, 6, 6]` parameter so that its bilinear upsample (PyTorch's convention,
/// `align_corners = false`) to 12×12 matches a seeded target, by 20 steps of plain gradient
/// descent on the mean squared error: the smallest training loop that needs a bilinear backward.
pub fn fit_bilinear_upsample<B: AutodiffBackend>(device: &B::Device) -> Fit {
    let data = |seed, shape: [usize; 4]| {
        let n = shape.iter().product();
        let values: Vec<f32> = uniform(seed, n).iter().map(|v| *v as f32).collect();
        TensorData::new(values, shape)
    };
    let options = InterpolateOptions::new(burn::tensor::ops::InterpolateMode::Bilinear)
        .with_align_corners(false);
    let target = Tensor::<B, 4>::from_data(data(2, [1, 2, 12, 12]), device);
    let mut param = Tensor::<B, 4>::from_data(data(1, [1, 2, 6, 6]), device).require_grad();
    let mut losses = Vec::new();
    for _ in 0..20 {
        let y = interpolate(param.clone(), [12, 12], options.clone());
        let loss = (y - target.clone()).powi_scalar(2).mean();
        losses.push(
            loss.clone()
                .into_data()
                .convert::<f32>()
                .to_vec::<f32>()
                .unwrap()[0],
        );
        let grads = loss.backward();
        let grad = param
            .grad(&grads)
            .expect("the parameter requires a gradient");
        param = Tensor::from_inner(param.inner() - grad * 2.0).require_grad();
    }
    Fit {
        losses,
        parameter_sha256: crate::metrics::sha256_hex(param.into_data().as_bytes()),
    }
}

/// `burn_deterministic::with_config` for configurations a test builds itself (valid by
/// construction): the scope's result, or a panic naming the invalid field.
pub fn configured<R>(config: burn_deterministic::DeterministicConfig, f: impl FnOnce() -> R) -> R {
    burn_deterministic::with_config(config, f).unwrap_or_else(|e| panic!("{e}"))
}

/// Every mode taken over, matmul forward on every device, and `layout` with blocks of
/// `block_size`: the configuration the layout tests compare.
pub fn rewrite_all_with(
    layout: burn_deterministic::WeightLayout,
    block_size: usize,
) -> burn_deterministic::DeterministicConfig {
    burn_deterministic::DeterministicConfig::default()
        .with_policy(burn_deterministic::RewritePolicy::Always)
        .with_modes(burn_deterministic::ModeSet::all())
        .with_layout(layout)
        .with_block_size(block_size)
}
