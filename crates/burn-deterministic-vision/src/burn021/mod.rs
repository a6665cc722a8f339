//! The Burn 0.21 glue: the models, burn-train's steps and metrics, and Burn 0.21's `Dataset`
//! and batches over the Burn-free samples.

pub mod models;
pub mod train;

use crate::data::{stack_depth, stack_segmentation, SyntheticDepth, SyntheticSegmentation};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

/// What Burn 0.21's `Dataset::get` returns.
type Got<I> = Option<I>;

fn got<I>(sample: Option<I>, _index: usize) -> Got<I> {
    sample
}

crate::sample_datasets!(burn);

impl SyntheticSegmentation {
    /// Items `indices` as a batch: images `[N, 3, H, W]` and masks `[N, H, W]`.
    pub fn batch<B: Backend>(
        &self,
        indices: &[usize],
        device: &B::Device,
    ) -> (Tensor<B, 4>, Tensor<B, 3, Int>) {
        let samples: Vec<_> = indices.iter().map(|&i| self.get(i)).collect();
        let (images, masks, [n, h, w]) = stack_segmentation(&samples);
        (
            Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            Tensor::from_data(TensorData::new(masks, [n, h, w]), device),
        )
    }
}

impl SyntheticDepth {
    /// Items `indices` as a batch: images `[N, 3, H, W]` and depth `[N, 1, H, W]`.
    pub fn batch<B: Backend>(
        &self,
        indices: &[usize],
        device: &B::Device,
    ) -> (Tensor<B, 4>, Tensor<B, 4>) {
        let samples: Vec<_> = indices.iter().map(|&i| self.get(i)).collect();
        let (images, depth, [n, h, w]) = stack_depth(&samples);
        (
            Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            Tensor::from_data(TensorData::new(depth, [n, 1, h, w]), device),
        )
    }
}
