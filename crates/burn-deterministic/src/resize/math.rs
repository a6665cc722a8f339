//! The math, in one place: weights → per-axis map → separable product → adjoint.
//!
//! 1. **Weights.** Each axis' `W: [out, in]` is read off `B`'s own forward kernel, so every
//!    weight is what `B` computes (`weights.rs`).
//! 2. **Per-axis map.** `W` is stored dense, or banded when its rows read few inputs
//!    (`burn-deterministic-core` lays the bands out and counts their cost, `apply.rs`
//!    multiplies), and cached per geometry (`cache.rs`).
//! 3. **Separable product.** `y[n, c] = Wh · x[n, c] · Wwᵀ`: one pass per axis.
//! 4. **Adjoint.** The gradient of `sum(y · g)` is `dx[n, c] = Whᵀ · g[n, c] · Ww`: the same
//!    maps, transposed.
//!
//! Both are fixed sequences of GEMMs of the inner backend: no atomics, no accumulation order
//! left to a scheduler, so the same inputs give the same bits on every run.

use super::apply::{pad_planes, AxisMap, Dim};
use super::cache;
use super::check::Checked;
use crate::config::DeterministicConfig;
use burn_backend::ops::InterpolateOptions;
use burn_backend::tensor::FloatTensor;
use burn_backend::{Backend, DType};

/// Both axes' maps for one resize `[h, w] → [p, q]`, from the cache or built from `B`'s kernel.
pub(super) struct ResizePlan<B: Backend> {
    height: AxisMap<B>,
    width: AxisMap<B>,
    input: [usize; 2],
    output: [usize; 2],
}

impl<B: Backend> ResizePlan<B> {
    pub fn new(
        checked: &Checked,
        output: [usize; 2],
        options: &InterpolateOptions,
        dtype: DType,
        device: &B::Device,
        config: &DeterministicConfig,
    ) -> Self {
        let input = [checked.dims[2], checked.dims[3]];
        let map = |axis: usize| {
            let layout = checked.layouts[axis];
            let (input, output) = (input[axis], output[axis]);
            let key = cache::key::<B>(device, dtype, input, output, options, layout);
            cache::get_or_build(
                key,
                config.cache_max_entries,
                config.cache_max_bytes,
                || AxisMap::build(layout, input, output, options, dtype, device),
            )
        };
        Self {
            height: map(0),
            width: map(1),
            input,
            output,
        }
    }

    /// `Wh · x · Wwᵀ`.
    pub fn forward(&self, x: FloatTensor<B>) -> FloatTensor<B> {
        if let (Some(height), Some(width)) =
            (self.height.uniform_forward(), self.width.uniform_forward())
        {
            // Both bands have uniform windows: pad the (small) input once along both axes,
            // then two transposing passes, `[N, C, H, W] → [N, C, Q, H] → [N, C, P, Q]`, whose
            // windows are views and whose results come out in the layout the next pass reads.
            let padded = pad_planes::<B>(x, [height.stride(), width.stride()]);
            return height.apply_transposed(width.apply_transposed(padded));
        }
        self.separable(x, self.input, self.output, AxisMap::forward)
    }

    /// `Whᵀ · g · Ww`, the exact adjoint of [`Self::forward`]'s map.
    pub fn adjoint(&self, g: FloatTensor<B>) -> FloatTensor<B> {
        self.separable(g, self.output, self.input, AxisMap::adjoint)
    }

    /// One pass per axis, `[h, w] → [p, q]`, in the cheaper order (see [`Self::height_first`]).
    fn separable(
        &self,
        t: FloatTensor<B>,
        from: [usize; 2],
        to: [usize; 2],
        pass: impl Fn(&AxisMap<B>, FloatTensor<B>, Dim) -> FloatTensor<B>,
    ) -> FloatTensor<B> {
        if self.height_first(from, to) {
            pass(&self.width, pass(&self.height, t, Dim::Height), Dim::Width)
        } else {
            pass(&self.height, pass(&self.width, t, Dim::Width), Dim::Height)
        }
    }

    /// Whether to resize the height axis first, for a pass that takes `[h, w]` planes to
    /// `[p, q]` (the adjoint goes from the output size to the input size): the engine's one rule
    /// ([`burn_deterministic_core::height_first`]), from the maps' costs.
    fn height_first(&self, from: [usize; 2], to: [usize; 2]) -> bool {
        let both_dense = self.height.is_dense() && self.width.is_dense();
        let (height, width) = (self.height.cost().macs, self.width.cost().macs);
        burn_deterministic_core::height_first(height, width, both_dense, from, to)
    }
}
