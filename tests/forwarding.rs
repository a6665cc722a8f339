//! Forwarding is transparent: a sweep of ordinary ops (arithmetic, reductions, matmul, conv2d
//! and its backward, pooling, activations, sort, cat, int and bool ops, require_grad/detach)
//! gives bit-identical results on `DeterministicBackend<B>` and on `B`.

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::{avg_pool2d, conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{activation, DType, Int, Tensor, TensorData};
use burn_deterministic::DeterministicBackend;
use burn_deterministic_suite::harness::{tensor, uniform};

/// Named results of the sweep on backend `B`.
fn sweep<B: Backend>(device: &B::Device) -> Vec<(&'static str, TensorData)> {
    let a: Tensor<B, 4> = tensor(
        &uniform(11, 2 * 3 * 8 * 8),
        [2, 3, 8, 8],
        DType::F32,
        device,
    );
    let b: Tensor<B, 4> = tensor(
        &uniform(12, 2 * 3 * 8 * 8),
        [2, 3, 8, 8],
        DType::F32,
        device,
    );
    let w: Tensor<B, 4> = tensor(
        &uniform(13, 4 * 3 * 3 * 3),
        [4, 3, 3, 3],
        DType::F32,
        device,
    );
    let ints: Tensor<B, 4, Int> = (a.clone() * 10.0).int();
    let mask = a.clone().greater(b.clone());
    let (sorted, order) = a.clone().sort_with_indices(3);
    vec![
        ("add", (a.clone() + b.clone()).into_data()),
        (
            "sub_mul_div",
            ((a.clone() - b.clone()) * a.clone() / (b.clone().abs() + 1.0)).into_data(),
        ),
        (
            "exp_log_sqrt",
            (a.clone().exp() + (b.clone().abs() + 1.0).log() + a.clone().abs().sqrt()).into_data(),
        ),
        (
            "powf_tanh",
            (a.clone().abs().powf_scalar(1.7) + b.clone().tanh()).into_data(),
        ),
        ("matmul", a.clone().matmul(b.clone()).into_data()),
        ("sum_dim", a.clone().sum_dim(1).into_data()),
        ("mean_dim", a.clone().mean_dim(2).into_data()),
        ("max_dim", a.clone().max_dim(3).into_data()),
        ("argmax", a.clone().argmax(1).into_data()),
        ("sort", sorted.into_data()),
        ("sort_indices", order.into_data()),
        ("argsort", b.clone().argsort_descending(2).into_data()),
        (
            "cat",
            Tensor::cat(vec![a.clone(), b.clone()], 1).into_data(),
        ),
        (
            "slice_transpose_reshape",
            a.clone()
                .slice([0..1, 1..3])
                .swap_dims(2, 3)
                .reshape([2, 64])
                .into_data(),
        ),
        (
            "clamp_mask_where",
            a.clone()
                .clamp(-0.5, 0.5)
                .mask_where(mask.clone(), b.clone())
                .into_data(),
        ),
        (
            "bool_ops",
            mask.clone()
                .bool_and(a.clone().lower_elem(0.25))
                .bool_not()
                .int()
                .into_data(),
        ),
        ("int_ops", (ints.clone() * 3 + 7).sum_dim(3).into_data()),
        (
            "int_div_rem",
            (ints.clone().abs() + 1).remainder_scalar(3).into_data(),
        ),
        (
            "gather",
            a.clone()
                .gather(3, ints.clone().abs().clamp(0, 7))
                .into_data(),
        ),
        (
            "conv2d",
            conv2d(
                a.clone(),
                w.clone(),
                None,
                ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
            )
            .into_data(),
        ),
        (
            "max_pool2d",
            max_pool2d(a.clone(), [2, 2], [2, 2], [0, 0], [1, 1], false).into_data(),
        ),
        (
            "avg_pool2d",
            avg_pool2d(a.clone(), [3, 3], [1, 1], [1, 1], true, false).into_data(),
        ),
        ("softmax", activation::softmax(a.clone(), 3).into_data()),
        (
            "gelu_relu_sigmoid",
            (activation::gelu(a.clone())
                + activation::relu(b.clone())
                + activation::sigmoid(a.clone()))
            .into_data(),
        ),
    ]
}

/// conv2d + max-pool + gelu, differentiated: gradients of input and weight, and the
/// require_grad / detach state autodiff reports.
fn conv_backward<B: AutodiffBackend>(
    device: &B::Device,
) -> (Vec<(&'static str, TensorData)>, [bool; 4]) {
    let x: Tensor<B, 4> = tensor(
        &uniform(21, 2 * 3 * 8 * 8),
        [2, 3, 8, 8],
        DType::F32,
        device,
    )
    .require_grad();
    let w: Tensor<B, 4> = tensor(
        &uniform(22, 4 * 3 * 3 * 3),
        [4, 3, 3, 3],
        DType::F32,
        device,
    )
    .require_grad();
    let frozen = w.clone().detach();
    let untracked = w.clone().set_require_grad(false);
    assert!(
        w.is_require_grad() && !untracked.is_require_grad(),
        "require_grad state"
    );
    let y = conv2d(
        x.clone(),
        w.clone(),
        None,
        ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
    );
    let y = activation::gelu(max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], false));
    let seed: Tensor<B, 4> = tensor(
        &uniform(23, 2 * 4 * 4 * 4),
        [2, 4, 4, 4],
        DType::F32,
        device,
    );
    let grads = (y * seed).backward();
    let flags = [
        frozen.is_require_grad(),
        frozen.grad(&grads).is_some(),
        untracked.grad(&grads).is_some(),
        x.is_require_grad(),
    ];
    let grads = vec![
        ("conv_dx", x.grad(&grads).unwrap().into_data()),
        ("conv_dw", w.grad(&grads).unwrap().into_data()),
    ];
    (grads, flags)
}

fn assert_same(ours: Vec<(&str, TensorData)>, inner: Vec<(&str, TensorData)>) {
    assert_eq!(ours.len(), inner.len());
    for ((name, a), (_, b)) in ours.iter().zip(&inner) {
        assert_eq!(a.dtype, b.dtype, "{name}: dtype");
        assert_eq!(a.shape, b.shape, "{name}: shape");
        assert_eq!(a.as_bytes(), b.as_bytes(), "{name}: bits differ");
    }
}

fn check<B: AutodiffBackend>(device: &B::Device)
where
    B::InnerBackend: Backend<Device = B::Device>,
{
    assert_same(
        sweep::<DeterministicBackend<B::InnerBackend>>(device),
        sweep::<B::InnerBackend>(device),
    );
    let (inner_grads, inner_flags) = conv_backward::<B>(device);
    for (grads, flags) in [
        conv_backward::<burn::backend::Autodiff<DeterministicBackend<B::InnerBackend>>>(device),
        conv_backward::<DeterministicBackend<B>>(device),
    ] {
        assert_eq!(
            flags, inner_flags,
            "require_grad / detach / grad presence differ"
        );
        assert_same(grads, inner_grads.clone());
    }
}

#[cfg(feature = "ndarray")]
#[test]
fn ops_are_bit_identical_through_the_decorator_ndarray() {
    use burn::backend::ndarray::{NdArray, NdArrayDevice};
    check::<burn::backend::Autodiff<NdArray>>(&NdArrayDevice::Cpu);
}

#[cfg(feature = "flex")]
#[test]
fn ops_are_bit_identical_through_the_decorator_flex() {
    use burn::backend::flex::{Flex, FlexDevice};
    check::<burn::backend::Autodiff<Flex>>(&FlexDevice);
}

#[cfg(feature = "wgpu")]
#[test]
fn ops_are_bit_identical_through_the_decorator_wgpu() {
    let device = burn_deterministic_suite::wgpu_setup::test_device();
    check::<burn::backend::Autodiff<burn::backend::Wgpu>>(&device);
}
