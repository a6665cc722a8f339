//! Which backend an example trains on, its devices, and burn-train's strategy for them.
//!
//! The backend *type* is written in each example (`Autodiff<DeterministicBackend<…>>`); this
//! module only names the choice on the command line and lists the devices of each backend.

pub use burn_deterministic_vision::run::config::{BackendChoice, DataParallel};

/// `count` devices of a CPU backend: worker threads on the one CPU device (data-parallel
/// training runs one per "device").
pub fn cpu_devices<D: Default + Clone>(count: usize) -> Vec<D> {
    vec![D::default(); count]
}

/// Why `--devices` above 1 is refused on wgpu. Found by running it: burn-cubecl 0.21 moves a
/// tensor to another device with CubeCL's server-to-server transfer (`to_client_tensor`)
/// whatever the runtime, and CubeCL 0.10's wgpu runtime leaves that transfer
/// `unimplemented!()` (`comm_init`, `send`, `recv`). The panics happen on the device threads,
/// and the training went on with garbage: below-chance mIoU, different parameters every run.
/// The cause lies below the decorator: plain `Wgpu` has it too.
pub const WGPU_SINGLE_DEVICE: &str = "--devices above 1 is not available on wgpu: Burn 0.21 \
    cannot move a tensor between two wgpu devices (CubeCL 0.10's wgpu runtime has no \
    server-to-server transfer), and data-parallel training moves the model and the \
    gradients between devices";

/// The wgpu device on the Vulkan API (one only, see [`WGPU_SINGLE_DEVICE`]).
#[cfg(feature = "wgpu")]
pub fn wgpu_devices(count: usize) -> Result<Vec<burn::backend::wgpu::WgpuDevice>, String> {
    if count > 1 {
        return Err(WGPU_SINGLE_DEVICE.into());
    }
    let device = crate::wgpu_setup::vulkan_device()
        .ok_or("no Vulkan adapter for wgpu (install mesa-vulkan-drivers)")?;
    Ok(vec![device])
}

/// GPUs `0..count`.
#[cfg(feature = "cuda")]
pub fn cuda_devices(count: usize) -> Vec<burn::backend::cuda::CudaDevice> {
    (0..count)
        .map(burn::backend::cuda::CudaDevice::new)
        .collect()
}

/// The training strategy for `devices`: burn-train's single-device loop for one device, and for
/// several [`FixedOrderDataParallel`](burn_deterministic::train::FixedOrderDataParallel): every
/// device takes its own batch each step, the gradients are summed on the first device in device
/// order, the optimizer steps there. Or, for comparison ([`DataParallel::BurnTrain`]),
/// burn-train's own `MultiDevice`, which sums them in the order the workers finish: with three
/// or more devices the last bits can change from run to run.
pub fn training_strategy<LC: burn::train::LearningComponentsTypes + 'static>(
    devices: Vec<burn::tensor::Device<burn::train::TrainingBackend<LC>>>,
    data_parallel: DataParallel,
) -> burn::train::TrainingStrategy<LC> {
    use burn::train::{ExecutionStrategy, MultiDeviceOptim, TrainingStrategy};
    match (devices.len(), data_parallel) {
        (1, _) => TrainingStrategy::Default(ExecutionStrategy::SingleDevice(devices[0].clone())),
        (_, DataParallel::FixedOrder) => TrainingStrategy::Custom(std::sync::Arc::new(
            burn_deterministic::train::FixedOrderDataParallel::new(devices),
        )),
        (_, DataParallel::BurnTrain) => TrainingStrategy::Default(ExecutionStrategy::MultiDevice(
            devices,
            MultiDeviceOptim::OptimMainDevice,
        )),
    }
}
