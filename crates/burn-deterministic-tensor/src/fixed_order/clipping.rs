//! Gradient clipping by norm as an optimizer adaptor, in Burn 0.22's optimizer idiom.

use burn::optim::{LearningRate, ModuleOptimizer, Optimizer};
use burn::tensor::{Device, Tensor};

/// Any Burn 0.22 per-parameter [`Optimizer`] with each gradient clipped by its L2 norm first,
/// the norm summed in a fixed order ([`clip_by_norm`](super::clip_by_norm)): what
/// `GradientClipping::Norm(threshold)` in the optimizer's config does, whose norm is a full
/// `sum()` that meets its partial sums in float atomics on CubeCL. Leave the config's
/// `grad_clipping` unset and wrap the built optimizer instead:
///
/// ```rust
/// use burn::optim::{AdamConfig, ModuleOptimizer};
/// use burn_deterministic_tensor::fixed_order::NormClipped;
///
/// // Instead of AdamConfig::new().with_grad_clipping(Some(GradientClippingConfig::Norm(1.0))).init():
/// let optimizer: ModuleOptimizer = NormClipped::new(AdamConfig::new().build(), 1.0).into();
/// # let _ = optimizer;
/// ```
///
/// The optimizer's state and records are the wrapped optimizer's own.
#[derive(Debug, Clone)]
pub struct NormClipped<O> {
    optimizer: O,
    threshold: f32,
}

impl<O: Optimizer> NormClipped<O> {
    /// `optimizer`, with each gradient scaled down to L2 norm `threshold` where it is larger.
    ///
    /// # Panics
    ///
    /// If `threshold` is not a finite positive number (clipping to it would zero or poison
    /// every gradient).
    pub fn new(optimizer: O, threshold: f32) -> Self {
        assert!(
            threshold.is_finite() && threshold > 0.0,
            "burn-deterministic NormClipped: the threshold must be finite and positive, not \
             {threshold}"
        );
        Self {
            optimizer,
            threshold,
        }
    }

    /// The norm gradients are clipped to.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// This adaptor as the module optimizer Burn's training loops take.
    pub fn into_module_optimizer(self) -> ModuleOptimizer {
        self.into()
    }
}

impl<O: Optimizer> Optimizer for NormClipped<O> {
    type State<const D: usize> = O::State<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let grad = super::clip_by_norm(grad, self.threshold);
        self.optimizer.step(lr, tensor, grad, state)
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &Device) -> Self::State<D> {
        O::to_device(state, device)
    }
}
