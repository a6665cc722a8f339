//! The decorator type and its `Backend` / `AutodiffBackend` impls: plain forwarding.

use burn_backend::backend::{AutodiffBackend, Backend, BackendTypes, ExecutionError};
use burn_backend::tensor::{BoolTensor, FloatTensor, IntTensor, QuantizedTensor};
use burn_backend::{DType, DTypeUsageSet, TensorData};
use core::marker::PhantomData;

/// A backend decorator: every op is `B`'s, except 2-D `interpolate` and its backward, which are
/// computed as separable matmuls (see [`crate::resize`]).
///
/// It reuses `B`'s tensor primitives and device type, so a `Tensor<DeterministicBackend<B>, D>`
/// holds exactly `B`'s tensor and forwarding costs nothing.
///
/// ```rust
/// # #[cfg(feature = "wgpu")] {
/// use burn::backend::{Autodiff, Wgpu};
/// type Train = Autodiff<burn_deterministic::DeterministicBackend<Wgpu>>; // decorator inside autodiff
/// type Train2 = burn_deterministic::DeterministicBackend<Autodiff<Wgpu>>; // or outside it
/// # }
/// ```
///
/// It wraps every `B: Backend`, with no extra bound, so generic code can name it:
///
/// ```rust
/// use burn::tensor::backend::Backend;
/// use burn::tensor::Tensor;
/// use burn_deterministic::DeterministicBackend;
///
/// fn zeros_through_the_decorator<B: Backend>(device: &B::Device) -> Tensor<DeterministicBackend<B>, 2> {
///     Tensor::zeros([2, 3], device)
/// }
/// # #[cfg(feature = "ndarray")]
/// # assert_eq!(zeros_through_the_decorator::<burn::backend::NdArray>(&Default::default()).dims(), [2, 3]);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DeterministicBackend<B> {
    _inner: PhantomData<B>,
}

impl<B: Backend> BackendTypes for DeterministicBackend<B> {
    type Device = B::Device;

    type FloatTensorPrimitive = B::FloatTensorPrimitive;
    type FloatElem = B::FloatElem;

    type IntTensorPrimitive = B::IntTensorPrimitive;
    type IntElem = B::IntElem;

    type BoolTensorPrimitive = B::BoolTensorPrimitive;
    type BoolElem = B::BoolElem;

    type QuantizedTensorPrimitive = B::QuantizedTensorPrimitive;
}

impl<B: Backend> Backend for DeterministicBackend<B> {
    fn ad_enabled(device: &Self::Device) -> bool {
        B::ad_enabled(device)
    }

    fn memory_persistent_allocations<
        Output: Send,
        Input: Send,
        Func: Fn(Input) -> Output + Send,
    >(
        device: &Self::Device,
        input: Input,
        func: Func,
    ) -> Output {
        B::memory_persistent_allocations(device, input, func)
    }

    fn memory_cleanup(device: &Self::Device) {
        B::memory_cleanup(device)
    }

    fn name(device: &Self::Device) -> String {
        format!("deterministic<{}>", B::name(device))
    }

    fn seed(device: &Self::Device, seed: u64) {
        B::seed(device, seed)
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        B::sync(device)
    }

    fn staging<'a, Iter>(data: Iter, device: &Self::Device)
    where
        Iter: Iterator<Item = &'a mut TensorData>,
    {
        B::staging(data, device)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        B::supports_dtype(device, dtype)
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        B::dtype_usage(device, dtype)
    }

    fn device_count(type_id: u16) -> usize {
        B::device_count(type_id)
    }
}

/// With an autodiff backend inside (`DeterministicBackend<Autodiff<B>>`), the decorator is an
/// autodiff backend too, whose inner backend is decorated as well.
impl<B: AutodiffBackend> AutodiffBackend for DeterministicBackend<B> {
    type InnerBackend = DeterministicBackend<B::InnerBackend>;
    type Gradients = B::Gradients;

    fn backward(tensor: FloatTensor<Self>) -> Self::Gradients {
        B::backward(tensor)
    }

    fn grad(
        tensor: &FloatTensor<Self>,
        grads: &Self::Gradients,
    ) -> Option<FloatTensor<Self::InnerBackend>> {
        B::grad(tensor, grads)
    }

    fn grad_remove(
        tensor: &FloatTensor<Self>,
        grads: &mut Self::Gradients,
    ) -> Option<FloatTensor<Self::InnerBackend>> {
        B::grad_remove(tensor, grads)
    }

    fn grad_replace(
        tensor: &FloatTensor<Self>,
        grads: &mut Self::Gradients,
        grad: FloatTensor<Self::InnerBackend>,
    ) {
        B::grad_replace(tensor, grads, grad)
    }

    fn inner(tensor: FloatTensor<Self>) -> FloatTensor<Self::InnerBackend> {
        B::inner(tensor)
    }

    fn int_inner(tensor: IntTensor<Self>) -> IntTensor<Self::InnerBackend> {
        B::int_inner(tensor)
    }

    fn bool_inner(tensor: BoolTensor<Self>) -> BoolTensor<Self::InnerBackend> {
        B::bool_inner(tensor)
    }

    fn q_inner(tensor: QuantizedTensor<Self>) -> QuantizedTensor<Self::InnerBackend> {
        B::q_inner(tensor)
    }

    fn from_inner(tensor: FloatTensor<Self::InnerBackend>) -> FloatTensor<Self> {
        B::from_inner(tensor)
    }

    fn int_from_inner(tensor: IntTensor<Self::InnerBackend>) -> IntTensor<Self> {
        B::int_from_inner(tensor)
    }

    fn bool_from_inner(tensor: BoolTensor<Self::InnerBackend>) -> BoolTensor<Self> {
        B::bool_from_inner(tensor)
    }

    fn q_from_inner(tensor: QuantizedTensor<Self::InnerBackend>) -> QuantizedTensor<Self> {
        B::q_from_inner(tensor)
    }

    #[cfg(feature = "distributed")]
    fn set_distributed_params(
        tensor: FloatTensor<Self>,
        param_id: burn_backend::distributed::DistributedParamId,
    ) -> FloatTensor<Self> {
        B::set_distributed_params(tensor, param_id)
    }

    #[cfg(feature = "distributed")]
    fn distributed_params(
        tensor: &FloatTensor<Self>,
    ) -> Option<burn_backend::distributed::DistributedParams> {
        B::distributed_params(tensor)
    }

    #[cfg(feature = "distributed")]
    fn is_distributed(tensor: &FloatTensor<Self>) -> bool {
        B::is_distributed(tensor)
    }
}
