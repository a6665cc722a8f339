//! `DistributedBackend` through the decorator, on wgpu (software Vulkan in CI): the gradient-sync
//! server burn-train's DDP strategy starts is the inner backend's, and tensor references resolve
//! through the inner backend. Needs `--no-default-features --features wgpu,distributed` (with
//! `distributed`, Burn 0.21's `Autodiff` trains only on `DistributedBackend`s, which ndarray and
//! flex are not).
//!
//! `all_reduce` itself is not exercised: CubeCL 0.10 implements collectives only in its CUDA
//! runtime (NCCL); every other runtime, wgpu included, inherits `unimplemented!()`. So on wgpu
//! burn-train's DDP cannot sync gradients, with or without the decorator, and data-parallel
//! training uses the examples' fixed-order multi-device strategy instead (`--devices`).
#![cfg(all(feature = "distributed", feature = "wgpu"))]

use burn::backend::wgpu::{graphics::Vulkan, init_setup, Wgpu, WgpuDevice};
use burn_backend::distributed::{
    get_distributed_sync_client, DistributedBackend, DistributedConfig, ReduceOperation, TensorRef,
};
use burn_backend::ops::FloatTensorOps;
use burn_backend::TensorData;
use burn_deterministic::DeterministicBackend;
use std::sync::OnceLock;

type Det = DeterministicBackend<Wgpu>;

/// The default wgpu device on Vulkan, initialised once per process (a second `init_setup` of
/// the same device panics). Without an adapter the test fails with the reason: a test that
/// cannot run its check must not report success.
fn device() -> WgpuDevice {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    let device = WgpuDevice::DefaultDevice;
    let found = FOUND.get_or_init(|| {
        std::panic::catch_unwind(|| init_setup::<Vulkan>(&device, Default::default()))
            .map(drop)
            .map_err(|_| "no Vulkan adapter for wgpu".to_string())
    });
    if let Err(reason) = found {
        panic!("{reason}: install mesa-vulkan-drivers (software Vulkan), or leave the `wgpu` feature out");
    }
    device
}

#[test]
fn the_gradient_sync_server_is_the_inner_backends() {
    let device = device();
    let config = DistributedConfig {
        all_reduce_op: ReduceOperation::Mean,
    };
    assert!(get_distributed_sync_client::<Wgpu>().is_none());
    Det::start_communication_server(std::slice::from_ref(&device), config);
    // Burn keys the server by backend type: registering under the decorator's type would leave
    // the inner backend's gradient submissions without a server.
    assert!(get_distributed_sync_client::<Wgpu>().is_some());
    assert!(get_distributed_sync_client::<Det>().is_none());
    Det::close_communication_server(&device);
    assert!(get_distributed_sync_client::<Wgpu>().is_none());
}

#[test]
fn tensor_references_resolve_through_the_inner_backend() {
    let device = device();
    let values = vec![1.5f32, -2.0, 3.25];
    let mut tensor = Det::float_from_data(TensorData::new(values.clone(), [3]), &device);
    let reference = TensorRef::<Det>(&mut tensor);
    // Safety: `tensor` outlives the reference and nothing else touches it meanwhile.
    let (found_device, copy) = unsafe {
        (
            Det::comm_device(&reference),
            Det::float_from_ref(&reference),
        )
    };
    assert_eq!(found_device, device);
    let data = burn_backend::read_sync(Det::float_into_data(copy)).unwrap();
    assert_eq!(data.to_vec::<f32>().unwrap(), values);
}
