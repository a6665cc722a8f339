//! A wgpu device pinned to the Vulkan API, for tests, examples and benchmarks.
//!
//! Without a Vulkan driver, wgpu silently falls back to OpenGL, whose software rasteriser
//! computes wrong numbers for CubeCL kernels (seen: bilinear off by 0.43). So the device is
//! initialised with the Vulkan API only, and its adapter is reported.
//!
//! Tests take their device from [`test_device`]: without an adapter a wgpu test **fails** (a
//! test that cannot run its check must not report success). Examples and benchmarks use
//! [`vulkan_device`], which reports the reason and lets them fall back or leave the wgpu part out.

use burn::backend::wgpu::{graphics::Vulkan, init_setup, WgpuDevice};
use std::sync::OnceLock;

/// The default wgpu device on the Vulkan API, initialised once per process, or why there is
/// none.
fn vulkan_device_or_reason() -> Result<WgpuDevice, String> {
    static DEVICE: OnceLock<Result<(WgpuDevice, String), String>> = OnceLock::new();
    let found = DEVICE.get_or_init(|| {
        let device = WgpuDevice::DefaultDevice;
        let setup = std::panic::catch_unwind(|| init_setup::<Vulkan>(&device, Default::default()))
            .map_err(|panic| {
                let reason = crate::harness::payload_message(&*panic)
                    .unwrap_or_else(|| "unknown panic".into());
                format!("no Vulkan adapter for wgpu ({reason})")
            })?;
        let info = setup.adapter.get_info();
        let description = format!(
            "{} ({:?}, {:?}, driver {})",
            info.name, info.device_type, setup.backend, info.driver_info
        );
        eprintln!("wgpu adapter: {description}");
        Ok((device, description))
    });
    found
        .as_ref()
        .map(|(device, _)| device.clone())
        .map_err(Clone::clone)
}

/// The Vulkan device for examples and benchmarks: `None` (with the reason printed) when no
/// adapter exists.
pub fn vulkan_device() -> Option<WgpuDevice> {
    vulkan_device_or_reason()
        .inspect_err(|reason| {
            eprintln!("{reason}; install mesa-vulkan-drivers for software Vulkan");
        })
        .ok()
}

/// The Vulkan device for a test. Without an adapter it panics with the reason, so a wgpu test
/// fails instead of reporting `ok` unseen. There is no skip switch: to leave the wgpu tests out,
/// build the tests without the `wgpu` feature.
pub fn test_device() -> WgpuDevice {
    vulkan_device_or_reason().unwrap_or_else(|reason| {
        panic!(
            "{reason}. The wgpu tests need a Vulkan driver: install mesa-vulkan-drivers \
             (software Vulkan), or run the tests without the `wgpu` feature"
        )
    })
}
