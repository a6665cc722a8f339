//! A wgpu device pinned to the Vulkan API, for tests and examples.
//!
//! Without a Vulkan driver, wgpu silently falls back to OpenGL, whose software rasteriser
//! computes wrong numbers for CubeCL kernels (seen: bilinear off by 0.43). So the device is
//! initialised with the Vulkan API only, and its adapter is reported.

use burn::backend::wgpu::{graphics::Vulkan, init_setup, WgpuDevice};
use std::sync::OnceLock;

/// Environment variable that turns a missing adapter from a skip into a failure (CI sets it).
pub const REQUIRE_ENV_VAR: &str = "BURN_DETERMINISTIC_REQUIRE_WGPU";

/// The default wgpu device on the Vulkan API, initialised once per process; `None` (with the
/// reason printed) when no Vulkan adapter exists, unless `BURN_DETERMINISTIC_REQUIRE_WGPU=1`,
/// in which case it panics.
pub fn vulkan_device() -> Option<WgpuDevice> {
    static DEVICE: OnceLock<Result<(WgpuDevice, String), String>> = OnceLock::new();
    let found = DEVICE.get_or_init(|| {
        let device = WgpuDevice::DefaultDevice;
        let setup = std::panic::catch_unwind(|| init_setup::<Vulkan>(&device, Default::default()))
            .map_err(|panic| {
                let reason = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                format!("no Vulkan adapter for wgpu ({reason})")
            })?;
        let info = setup.adapter.get_info();
        let description = format!(
            "{} ({:?}, {:?}, driver {})",
            info.name, info.device_type, setup.backend, info.driver_info
        );
        Ok((device, description))
    });
    match found {
        Ok((device, description)) => {
            eprintln!("wgpu adapter: {description}");
            Some(device.clone())
        }
        Err(reason) => {
            if std::env::var(REQUIRE_ENV_VAR).is_ok_and(|v| v == "1") {
                panic!("{REQUIRE_ENV_VAR}=1 but {reason}");
            }
            eprintln!("SKIPPED: {reason}; install mesa-vulkan-drivers for software Vulkan");
            None
        }
    }
}
