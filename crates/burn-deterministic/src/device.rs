//! Type-driven device classification: whether a device runs on the host CPU.
//!
//! The default policy keeps the native forward on CPU devices (byte-identical to `B`) and
//! rewrites it on accelerators. The answer comes from the device *type*, implemented per backend
//! feature, never from matching adapter names.

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

/// Classifies a backend's device type. Implemented for the devices of the enabled backend
/// features; `DeterministicBackend<B>` requires it of `B::Device`.
pub trait DeviceClass {
    /// The kind of this device.
    fn device_kind(&self) -> DeviceKind;
}

#[cfg(feature = "ndarray")]
impl DeviceClass for burn::backend::ndarray::NdArrayDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }
}

#[cfg(feature = "flex")]
impl DeviceClass for burn::backend::flex::FlexDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }
}

/// Every wgpu adapter is an accelerator here, software Vulkan (llvmpipe) included: it runs
/// CubeCL kernels, whose interpolate has no bilinear/bicubic/lanczos3 backward.
#[cfg(feature = "wgpu")]
impl DeviceClass for burn::backend::wgpu::WgpuDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Accelerator
    }
}

#[cfg(feature = "cuda")]
impl DeviceClass for burn::backend::cuda::CudaDevice {
    fn device_kind(&self) -> DeviceKind {
        DeviceKind::Accelerator
    }
}
