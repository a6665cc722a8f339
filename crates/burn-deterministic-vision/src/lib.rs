//! The training examples' vision side, for both Burns the crate serves: synthetic scenes, PNG
//! folders, metrics, charts, run settings, logs and the `--check-determinism` flow — written
//! once, Burn-free — and, per Burn version, the glue: a small semantic-segmentation net and a
//! small depth net, batchers, train/validation steps and burn-train metrics.
//!
//! - Burn-free: [`data`], [`folder`], [`metrics`], [`plot`], [`rng`], [`run`].
//! - Burn 0.21 (feature `burn021`, on by default): [`models`], [`train`], generic over
//!   `B: Backend` (the same models run on a plain backend and on the decorated one).
//! - Burn 0.22.1 (feature `burn022`): [`burn022`], on `Tensor<D>`.
//!
//! Nothing here is specific to burn-deterministic: the models only call Burn's own
//! `interpolate`; each front door makes it trainable and deterministic.

pub mod data;
pub mod folder;
pub mod metrics;
pub mod plot;
pub mod rng;
pub mod run;

#[cfg(feature = "burn021")]
mod burn021;
#[cfg(feature = "burn021")]
pub use burn021::{models, train};

#[cfg(feature = "burn022")]
pub mod burn022;

/// Implements a Burn version's `Dataset` trait (`$burn::data::dataset::Dataset`) for the
/// Burn-free sample sources, through [`data::SampleSource`]. The invoking module names what its
/// Burn's `get` returns: `Got<I>`, made by `got(sample, index)` (Burn 0.21 an `Option`, Burn
/// 0.22 a `Result`).
#[cfg(any(feature = "burn021", feature = "burn022"))]
macro_rules! sample_datasets {
    ($burn:ident) => {
        $crate::sample_datasets!(@one $burn, $crate::data::SyntheticSegmentation, $crate::data::SegmentationSample);
        $crate::sample_datasets!(@one $burn, $crate::data::SyntheticDepth, $crate::data::DepthSample);
        $crate::sample_datasets!(@one $burn, $crate::folder::SegmentationFolder, $crate::data::SegmentationSample);
        $crate::sample_datasets!(@one $burn, $crate::folder::DepthFolder, $crate::data::DepthSample);
    };
    (@one $burn:ident, $source:ty, $sample:ty) => {
        impl $burn::data::dataset::Dataset<$sample> for $source {
            fn get(&self, index: usize) -> Got<$sample> {
                got($crate::data::SampleSource::sample(self, index), index)
            }

            fn len(&self) -> usize {
                $crate::data::SampleSource::sample_count(self)
            }
        }
    };
}
#[cfg(any(feature = "burn021", feature = "burn022"))]
pub(crate) use sample_datasets;
