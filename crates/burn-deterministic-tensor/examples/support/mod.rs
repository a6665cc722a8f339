//! What the two Burn 0.22 training examples share beyond `burn_deterministic_vision`: the devices
//! of the backend chosen on the command line.

use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::Device;
use burn_deterministic_vision::run::config::BackendChoice;

/// Why `--devices` above 1 is refused on wgpu: data-parallel training on several wgpu devices
/// has not been run by this project on Burn 0.22 (Burn 0.21's CubeCL could not move a tensor
/// between two wgpu devices at all).
const WGPU_SINGLE_DEVICE: &str = "--devices above 1 is not available on wgpu in this example: \
    data-parallel training moves the model and the gradients between devices, which this \
    project has not verified on Burn 0.22's wgpu";

/// `count` autodiff devices of `backend`: on flex, `count` worker threads on the one CPU device;
/// on wgpu, the Vulkan adapter (one device only).
pub fn devices(backend: BackendChoice, count: usize) -> Result<Vec<Device>, String> {
    let device = match backend {
        BackendChoice::Flex => Device::flex(),
        BackendChoice::Wgpu if count > 1 => return Err(WGPU_SINGLE_DEVICE.into()),
        BackendChoice::Wgpu => Device::wgpu_options()
            .graphics_api(WgpuBackend::Vulkan)
            .init()
            .map_err(|e| {
                format!("no Vulkan adapter for wgpu ({e}): install mesa-vulkan-drivers")
            })?,
        other => {
            return Err(format!(
                "backend {} is not built into this example (flex or wgpu)",
                other.name()
            ))
        }
    };
    Ok(vec![device.autodiff(); count])
}
