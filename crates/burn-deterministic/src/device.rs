//! Type-driven device classification: whether a device runs on the host CPU, and which of its
//! backend's kernels add in an order that can change from run to run.
//!
//! The default policy keeps the native forward on CPU devices (byte-identical to `B`) and
//! rewrites it on accelerators. The answers come from the device's *type* (its `TypeId`): built
//! in for the backends of this crate's features, marked by users for any other with
//! [`mark_device`] (no trait to implement, so no orphan rule in the way), and otherwise
//! [`DeviceProfile::UNKNOWN`]: an accelerator with every hazard, which is always correct.

use burn_backend::ops::InterpolateMode;
use burn_backend::DType;
use core::any::TypeId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// Where a device computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceKind {
    /// A host CPU backend (ndarray, flex): native kernels are sequential per output element, so
    /// the forward stays native under the `auto` policy.
    Cpu,
    /// A GPU-style runtime (wgpu, cuda, rocm): native resize kernels are missing a backward, and
    /// matmuls are the fast, deterministic path.
    Accelerator,
}

/// When a backend's full reduction (`float_sum`, `float_mean`) stops adding in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// Which of Burn's `interpolate` kernels a backend has, per mode: a forward and a backward.
///
/// Declared, never probed: the decorator reads weights off `B`'s forward kernel only where it
/// has one (else off a host reference kernel), and takes a mode's backward over wherever `B`
/// has none, whatever the configuration's `modes` say. Nothing calls a kernel to see whether it
/// panics, so the library works in binaries built with `panic = "abort"`.
///
/// ```rust
/// use burn::tensor::ops::InterpolateMode;
/// use burn_deterministic::InterpolateKernels;
///
/// // Candle 0.21: a nearest forward, no other forward, no backward.
/// let candle = InterpolateKernels::NONE.with_forward(InterpolateMode::Nearest);
/// assert!(candle.has_forward(&InterpolateMode::Nearest));
/// assert!(!candle.has_forward(&InterpolateMode::Bilinear));
/// assert!(!candle.has_backward(&InterpolateMode::Nearest));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterpolateKernels {
    forward: u8,
    backward: u8,
}

impl InterpolateKernels {
    const EVERY_MODE: u8 = 0b1111;

    /// A forward and a backward kernel for every mode.
    pub const ALL: Self = Self {
        forward: Self::EVERY_MODE,
        backward: Self::EVERY_MODE,
    };

    /// A forward kernel for every mode and no backward: what a backend the decorator does not
    /// know is assumed to have (its forward is read, its backward never called).
    pub const FORWARD_ONLY: Self = Self {
        forward: Self::EVERY_MODE,
        backward: 0,
    };

    /// No kernel at all: weights come from the host reference kernel, and the decorator
    /// computes every backward.
    pub const NONE: Self = Self {
        forward: 0,
        backward: 0,
    };

    const fn bit(mode: InterpolateMode) -> u8 {
        match mode {
            InterpolateMode::Nearest => 1,
            InterpolateMode::Bilinear => 2,
            InterpolateMode::Bicubic => 4,
            InterpolateMode::Lanczos3 => 8,
        }
    }

    /// These kernels and a forward for `mode`.
    pub const fn with_forward(self, mode: InterpolateMode) -> Self {
        Self {
            forward: self.forward | Self::bit(mode),
            ..self
        }
    }

    /// These kernels and a backward for `mode`.
    pub const fn with_backward(self, mode: InterpolateMode) -> Self {
        Self {
            backward: self.backward | Self::bit(mode),
            ..self
        }
    }

    /// These kernels without the forward for `mode`.
    pub const fn without_forward(self, mode: InterpolateMode) -> Self {
        Self {
            forward: self.forward & !Self::bit(mode),
            ..self
        }
    }

    /// These kernels without the backward for `mode`.
    pub const fn without_backward(self, mode: InterpolateMode) -> Self {
        Self {
            backward: self.backward & !Self::bit(mode),
            ..self
        }
    }

    /// Whether the backend's `interpolate` runs `mode`.
    pub fn has_forward(&self, mode: &InterpolateMode) -> bool {
        self.forward & Self::bit(mode.clone()) != 0
    }

    /// Whether the backend's `interpolate_backward` runs `mode`.
    pub fn has_backward(&self, mode: &InterpolateMode) -> bool {
        self.backward & Self::bit(mode.clone()) != 0
    }
}

/// What the decorator knows of a device: where it computes, which of its backend's kernels
/// add in a varying order, and whether CubeCL's autotune picks its kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceProfile {
    /// Where the device computes: decides the forward under the `auto` policy.
    pub kind: DeviceKind,
    /// Which of its backend's kernels add in a run-dependent order.
    pub order_hazards: OrderHazards,
    /// Which `interpolate` kernels its backend has (see [`InterpolateKernels`]).
    pub interpolate_kernels: InterpolateKernels,
    /// Kernels chosen by CubeCL's autotune (timed on first use and cached), so that bits can
    /// depend on the cache.
    pub autotuned: bool,
}

impl DeviceProfile {
    /// A device the decorator does not know: an accelerator with every hazard. The matmul
    /// forward is correct on any backend, and each rewrite computes the same function as the
    /// native op, so assuming too much costs speed, never correctness.
    pub const UNKNOWN: Self = Self {
        kind: DeviceKind::Accelerator,
        order_hazards: OrderHazards::ALL,
        interpolate_kernels: InterpolateKernels::FORWARD_ONLY,
        autotuned: false,
    };

    /// A host CPU device whose kernels all add in a fixed order.
    /// Its backend is assumed to have every forward kernel and no backward.
    pub const CPU: Self = Self {
        kind: DeviceKind::Cpu,
        order_hazards: OrderHazards::NONE,
        interpolate_kernels: InterpolateKernels::FORWARD_ONLY,
        autotuned: false,
    };
}

/// Device types marked by users, looked up before the built-in ones.
static MARKED: RwLock<Vec<(TypeId, DeviceProfile)>> = RwLock::new(Vec::new());
/// Whether [`MARKED`] has an entry: the common case (none) skips the lock.
static ANY_MARKED: AtomicBool = AtomicBool::new(false);

/// Marks device type `D` (a backend's `Device`, typically of a backend in your own crate, or one
/// this crate does not know) with `profile`, for every `DeterministicBackend` whose inner
/// backend uses it. Call it before the first tensor is created on such a device; marking a
/// type again replaces its profile. It also overrides the built-in profiles.
///
/// ```rust
/// use burn_deterministic::{device_profile, mark_device, DeviceKind, DeviceProfile};
///
/// /// A device type of a backend in your crate (here a stand-in).
/// struct MyDevice;
///
/// assert_eq!(device_profile(&MyDevice).kind, DeviceKind::Accelerator); // unknown: the safe default
/// mark_device::<MyDevice>(DeviceProfile::CPU);
/// assert_eq!(device_profile(&MyDevice).kind, DeviceKind::Cpu);
/// ```
pub fn mark_device<D: 'static>(profile: DeviceProfile) {
    let mut marked = MARKED.write().unwrap_or_else(|e| e.into_inner());
    let id = TypeId::of::<D>();
    marked.retain(|(marked, _)| *marked != id);
    marked.push((id, profile));
    ANY_MARKED.store(true, Ordering::Release);
}

/// The profile of device type `D`: as marked with [`mark_device`], else built in for the
/// devices of this crate's backend features, else [`DeviceProfile::UNKNOWN`].
pub fn device_profile<D: 'static>(_device: &D) -> DeviceProfile {
    let id = TypeId::of::<D>();
    marked(id)
        .or_else(|| built_in(id))
        .unwrap_or(DeviceProfile::UNKNOWN)
}

/// The profile [`mark_device`] gave device type `id`, if any.
fn marked(id: TypeId) -> Option<DeviceProfile> {
    if !ANY_MARKED.load(Ordering::Acquire) {
        return None;
    }
    let marked = MARKED.read().unwrap_or_else(|e| e.into_inner());
    marked
        .iter()
        .find(|(marked, _)| *marked == id)
        .map(|(_, profile)| *profile)
}

/// The devices of the enabled backend features, by type (never by adapter name).
#[allow(unused_variables)]
fn built_in(id: TypeId) -> Option<DeviceProfile> {
    // ndarray's sums and scatters run in a fixed order. Its `deform_conv2d` input gradient adds
    // into `AtomicF32`s from rayon tasks when burn-ndarray's `multi-threads` feature is on (it
    // is in Burn's default features); whether it is cannot be seen from here, so it is
    // rewritten.
    #[cfg(feature = "ndarray")]
    if id == TypeId::of::<burn::backend::ndarray::NdArrayDevice>() {
        return Some(ndarray());
    }
    // flex sums f32 tensors of 4 Mi elements or more with rayon (`par_chunks(..).sum()`,
    // burn-flex 0.21 `ops/reduce.rs`); its mean divides that sum. Everything else it adds in
    // order (its `deform_conv2d` backward is one sequential loop).
    #[cfg(feature = "flex")]
    if id == TypeId::of::<burn::backend::flex::FlexDevice>() {
        return Some(flex());
    }
    // Every wgpu adapter is an accelerator here, software Vulkan (llvmpipe) included: it runs
    // CubeCL kernels, whose interpolate has no bilinear/bicubic/lanczos3 backward.
    #[cfg(feature = "wgpu")]
    if id == TypeId::of::<burn::backend::wgpu::WgpuDevice>() {
        return Some(cubecl());
    }
    #[cfg(feature = "cuda")]
    if id == TypeId::of::<burn::backend::cuda::CudaDevice>() {
        return Some(cubecl());
    }
    #[cfg(feature = "rocm")]
    if id == TypeId::of::<burn::backend::rocm::RocmDevice>() {
        return Some(cubecl());
    }
    // Candle (CPU, CUDA or Metal behind one device type: an accelerator, every hazard assumed).
    // burn-candle 0.21 `ops/module.rs`: a nearest forward only; every backward panics.
    // (burn-candle is deprecated in Burn 0.21, and still a backend users run.)
    #[cfg(feature = "candle")]
    #[allow(deprecated)]
    if id == TypeId::of::<burn::backend::candle::CandleDevice>() {
        return Some(candle());
    }
    None
}

// The profiles of the backends this crate knows, by their Burn 0.21 sources. Built in by device
// type where the backend's feature is on; recognised by the backend's name where it is not.

// ndarray's sums and scatters run in a fixed order; see `built_in` for its deform gradient.
fn ndarray() -> DeviceProfile {
    DeviceProfile {
        order_hazards: OrderHazards {
            deform_conv2d_input_grad: true,
            ..OrderHazards::NONE
        },
        // burn-ndarray 0.21 `ops/module.rs`: every forward; the backward panics for
        // bilinear, bicubic and lanczos3.
        interpolate_kernels: InterpolateKernels::FORWARD_ONLY
            .with_backward(InterpolateMode::Nearest),
        ..DeviceProfile::CPU
    }
}

fn flex() -> DeviceProfile {
    let from = FullSumOrder::ThreadPoolFromF32Elements(4 * 1024 * 1024);
    DeviceProfile {
        order_hazards: OrderHazards {
            sum: from,
            mean: from,
            ..OrderHazards::NONE
        },
        // burn-flex 0.21 `ops/module.rs`: every forward; the backward panics for lanczos3.
        interpolate_kernels: InterpolateKernels::ALL.without_backward(InterpolateMode::Lanczos3),
        ..DeviceProfile::CPU
    }
}

fn candle() -> DeviceProfile {
    DeviceProfile {
        interpolate_kernels: InterpolateKernels::NONE.with_forward(InterpolateMode::Nearest),
        ..DeviceProfile::UNKNOWN
    }
}

/// The profile of a backend this crate knows, from the name Burn gives it (`Backend::name`):
/// `candle<cpu|cuda|metal>`, `ndarray`, `flex`. For a device type whose backend feature is off
/// on this crate, where [`device_profile`] would give [`DeviceProfile::UNKNOWN`] (which assumes
/// every forward kernel: Candle has only nearest). A CubeCL backend (`cubecl<…>`, also inside
/// `fusion<…>`) stays unknown: the unknown profile's hazards are a superset of its own, and
/// whether it autotunes can only be read with the crate's feature for it.
pub fn profile_by_backend_name(name: &str) -> Option<DeviceProfile> {
    if name.starts_with("candle<") {
        Some(candle())
    } else if name == "ndarray" {
        Some(ndarray())
    } else if name == "flex" {
        Some(flex())
    } else {
        None
    }
}

/// The profile of `B`'s `device`: [`device_profile`] when the device type is marked or built
/// in, else recognised by `B`'s name ([`profile_by_backend_name`]), else
/// [`DeviceProfile::UNKNOWN`]. What the decorator consults before every rewrite decision.
pub(crate) fn backend_profile<B: burn_backend::Backend>(device: &B::Device) -> DeviceProfile {
    let id = TypeId::of::<B::Device>();
    if let Some(profile) = marked(id).or_else(|| built_in(id)) {
        return profile;
    }
    // Recognised once per device type: a name is a formatted string.
    static BY_NAME: RwLock<Vec<(TypeId, DeviceProfile)>> = RwLock::new(Vec::new());
    if let Some((_, profile)) = BY_NAME
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(seen, _)| *seen == id)
    {
        return *profile;
    }
    let profile = profile_by_backend_name(&B::name(device)).unwrap_or(DeviceProfile::UNKNOWN);
    BY_NAME
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, profile));
    profile
}

#[cfg(any(feature = "wgpu", feature = "cuda", feature = "rocm"))]
fn cubecl() -> DeviceProfile {
    DeviceProfile {
        kind: DeviceKind::Accelerator,
        order_hazards: OrderHazards::CUBECL,
        // burn-cubecl 0.21: every forward; the backward panics for bilinear, bicubic, lanczos3.
        interpolate_kernels: InterpolateKernels::FORWARD_ONLY
            .with_backward(InterpolateMode::Nearest),
        autotuned: crate::determinism::autotune::compiled_in(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Backends known by name get their declared kernels without their feature on this crate.
    #[test]
    fn known_backends_are_recognised_by_name() {
        for name in ["candle<cpu>", "candle<cuda>", "candle<metal>"] {
            let candle = profile_by_backend_name(name).expect("candle is known");
            assert!(candle
                .interpolate_kernels
                .has_forward(&InterpolateMode::Nearest));
            assert!(!candle
                .interpolate_kernels
                .has_forward(&InterpolateMode::Bilinear));
            assert!(!candle
                .interpolate_kernels
                .has_backward(&InterpolateMode::Nearest));
        }
        let flex = profile_by_backend_name("flex").expect("flex is known");
        assert_eq!(flex.kind, DeviceKind::Cpu);
        assert!(!flex
            .interpolate_kernels
            .has_backward(&InterpolateMode::Lanczos3));
        let ndarray = profile_by_backend_name("ndarray").expect("ndarray is known");
        assert!(ndarray.order_hazards.deform_conv2d_input_grad);
        assert_eq!(profile_by_backend_name("fusion<cubecl<wgpu>>"), None);
        assert_eq!(profile_by_backend_name("my-backend"), None);
    }

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
