//! `DistributedBackend` forwarding, for data-parallel training through the decorator
//! (burn-train's multi-device strategy). Every method goes to `B`, including the ones with
//! default bodies: those key Burn's gradient-sync server by backend type, so mixing `Self` and
//! `B` would register parameters with one server and submit gradients to another.

use crate::DeterministicBackend;
use burn_backend::distributed::{
    CollectiveTensor, DistributedBackend, DistributedConfig, DistributedParams, ReduceOperation,
    TensorRef,
};
use burn_backend::tensor::{Device, FloatTensor};
use burn_backend::DeviceId;

impl<B: DistributedBackend> DistributedBackend for DeterministicBackend<B> {
    fn start_communication_server(devices: &[Self::Device], config: DistributedConfig) {
        B::start_communication_server(devices, config)
    }

    fn close_communication_server(device: &Self::Device) {
        B::close_communication_server(device)
    }

    fn register_sync_parameters(device: &Self::Device, distributed_params: Vec<DistributedParams>) {
        B::register_sync_parameters(device, distributed_params)
    }

    fn submit_sync_collective(device: &Self::Device) {
        B::submit_sync_collective(device)
    }

    fn submit_gradient_sync(tensor: TensorRef<Self>, distributed_params: DistributedParams) {
        B::submit_gradient_sync(TensorRef(tensor.0), distributed_params)
    }

    fn all_reduce(
        tensor: FloatTensor<Self>,
        op: ReduceOperation,
        device_ids: Vec<DeviceId>,
    ) -> CollectiveTensor<Self> {
        let collective = B::all_reduce(tensor, op, device_ids);
        // Safety: the handle is only re-wrapped, not used; `resolve()` on the result calls
        // `Self::sync_collective`, which is `B::sync_collective`.
        CollectiveTensor::new(unsafe { collective.assume_resolved() })
    }

    fn sync_collective(device: &Self::Device) {
        B::sync_collective(device)
    }

    unsafe fn comm_device(tensor: &TensorRef<Self>) -> Device<Self> {
        unsafe { B::comm_device(&TensorRef(tensor.0)) }
    }

    unsafe fn float_from_ref(tensor: &TensorRef<Self>) -> FloatTensor<Self> {
        unsafe { B::float_from_ref(&TensorRef(tensor.0)) }
    }
}
