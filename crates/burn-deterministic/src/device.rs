//! Type-driven device classification: whether a device runs on the host CPU, and which of its
//! backend's kernels add in an order that can change from run to run.
//!
//! The default policy keeps the native forward on CPU devices (byte-identical to `B`) and
//! rewrites it on accelerators. The answers come from the device *type*, implemented per
//! backend feature, never from matching adapter names.

use burn_backend::DType;

/// Where a device computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A host CPU backend (ndarray, flex): native kernels are sequential per output element, so
    /// the forward stays native under the `auto` policy.
    Cpu,
    /// A GPU-style runtime (wgpu, cuda): native resize kernels are missing a backward, and
    /// matmuls are the fast, deterministic path.
    Accelerator,
}

/// When a backend's full reduction (`float_sum`, `float_mean`) stops adding in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullSumOrder {
    /// Always a fixed order: the native op is kept.
    Fixed,
    /// Never: partial sums meet in a float atomic add (CubeCL's one-shot sum).
    Atomic,
    /// f32 tensors of at least this many elements are split over a thread pool whose
    /// work-stealing decides how partial sums are grouped (flex: rayon, 4 Mi elements).
    ThreadPoolFromF32Elements(usize),
}

impl FullSumOrder {
    /// Whether a full reduction of `elements` values of `dtype` may change bits between runs.
    pub fn varies(self, dtype: DType, elements: usize) -> bool {
        match self {
            Self::Fixed => false,
            Self::Atomic => true,
            Self::ThreadPoolFromF32Elements(from) => dtype == DType::F32 && elements >= from,
        }
    }
}

/// Which native kernels of a backend are order-nondeterministic on a device: the ops the
/// decorator replaces with fixed-order compositions (see [`crate::determinism`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderHazards {
    /// `float_sum` and `q_sum`.
    pub sum: FullSumOrder,
    /// `float_mean`.
    pub mean: FullSumOrder,
    /// `float_scatter_nd` / `int_scatter_nd` with repeated index tuples: one thread per update,
    /// unsynchronised read-modify-write, so repeated targets lose updates in a varying way.
    pub scatter_nd: bool,
    /// `deform_conv2d_backward`'s input gradient: column gradients scattered onto the input with
    /// a float atomic add per pixel (CubeCL's `fetch_add`; ndarray's `AtomicF32` under rayon).
    pub deform_conv2d_input_grad: bool,
}

impl OrderHazards {
    /// Every hazard: what an unknown accelerator is assumed to have. Each rewrite computes the
    /// same function as the native op, so assuming too much costs speed, never correctness.
    pub const ALL: Self = Self {
        sum: FullSumOrder::Atomic,
        mean: FullSumOrder::Atomic,
        scatter_nd: true,
        deform_conv2d_input_grad: true,
    };

    /// No hazard: every native op the decorator knows of adds in a fixed order.
    pub const NONE: Self = Self {
        sum: FullSumOrder::Fixed,
        mean: FullSumOrder::Fixed,
        scatter_nd: false,
        deform_conv2d_input_grad: false,
    };

    /// CubeCL (wgpu, cuda, rocm) in Burn 0.21: `float_sum` ends in cubek-reduce's shared sum
    /// (`fetch_add` of partial sums), `float_mean` is a chain of per-axis reductions (fixed
    /// order), `scatter_nd` updates without synchronisation, `deform_conv2d`'s input gradient
    /// adds with float atomics.
    pub const CUBECL: Self = Self {
        sum: FullSumOrder::Atomic,
        mean: FullSumOrder::Fixed,
        scatter_nd: true,
        deform_conv2d_input_grad: true,
    };
}

/// Classifies a backend's device type. Implemented for the devices of the enabled backend
/// features; `DeterministicBackend<B>` requires it of `B::Device`.
pub trait DeviceClass {
    /// The kind of this device.
    fn device_kind(&self) -> DeviceKind;

    /// Which of the backend's kernels on this device are order-nondeterministic. Defaults to
    /// [`OrderHazards::ALL`]: rewriting an op that was deterministic already is only slower.
    fn order_hazards(&self) -> OrderHazards {
        OrderHazards::ALL
    }

    /// Whether kernels on this device are chosen by CubeCL's autotune (timed on first use and
    /// cached), so that bits can depend on the cache. `false` unless the backend is a CubeCL
    /// one built with Burn's `autotune` feature.
    fn autotuned(&self) -> bool {
        false
    }
}

/// ndarray's sums and scatters run in a fixed order. Its `deform_conv2d` input gradient adds
/// into `AtomicF32`s from rayon tasks when burn-ndarray's `multi-threads` feature is on (it is
/// in Burn's default features); whether it is cannot be seen from here, so it is rewritten.
#[cfg(feature = "ndarray")]
impl DeviceClass for burn::backend::ndarray::NdArrayDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }

    fn order_hazards(&self) -> OrderHazards {
        OrderHazards {
            deform_conv2d_input_grad: true,
            ..OrderHazards::NONE
        }
    }
}

/// flex sums f32 tensors of 4 Mi elements or more with rayon (`par_chunks(..).sum()`,
/// burn-flex 0.21 `ops/reduce.rs`); its mean divides that sum. Everything else it adds in order
/// (its `deform_conv2d` backward is one sequential loop).
#[cfg(feature = "flex")]
impl DeviceClass for burn::backend::flex::FlexDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }

    fn order_hazards(&self) -> OrderHazards {
        let from = FullSumOrder::ThreadPoolFromF32Elements(4 * 1024 * 1024);
        OrderHazards {
            sum: from,
            mean: from,
            ..OrderHazards::NONE
        }
    }
}

/// Every wgpu adapter is an accelerator here, software Vulkan (llvmpipe) included: it runs
/// CubeCL kernels, whose interpolate has no bilinear/bicubic/lanczos3 backward.
#[cfg(feature = "wgpu")]
impl DeviceClass for burn::backend::wgpu::WgpuDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Accelerator
    }

    fn order_hazards(&self) -> OrderHazards {
        OrderHazards::CUBECL
    }

    fn autotuned(&self) -> bool {
        crate::determinism::autotune::compiled_in()
    }
}

#[cfg(feature = "cuda")]
impl DeviceClass for burn::backend::cuda::CudaDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Accelerator
    }

    fn order_hazards(&self) -> OrderHazards {
        OrderHazards::CUBECL
    }

    fn autotuned(&self) -> bool {
        crate::determinism::autotune::compiled_in()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pool_sum_varies_only_for_large_f32_tensors() {
        let flex = FullSumOrder::ThreadPoolFromF32Elements(4 << 20);
        assert!(!flex.varies(DType::F32, (4 << 20) - 1));
        assert!(flex.varies(DType::F32, 4 << 20));
        assert!(!flex.varies(DType::F64, 8 << 20));
        assert!(FullSumOrder::Atomic.varies(DType::F16, 1));
        assert!(!FullSumOrder::Fixed.varies(DType::F32, usize::MAX));
    }
}
