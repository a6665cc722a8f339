//! A few generic types of Burn's ops traits hold the same primitives for `B` and for
//! `DeterministicBackend<B>` but are distinct types; the generated forwarding rebuilds them here.
//! (Result structs such as `MaxPool2dWithIndices` are rebuilt field by field by the generator.)

use crate::DeterministicBackend;
use burn_backend::quantization::QuantizationParametersPrimitive;
use burn_backend::{Backend, TensorPrimitive};

/// `B`'s float-or-quantized result, for the decorator.
pub(crate) fn outer_primitive<B: Backend>(
    tensor: TensorPrimitive<B>,
) -> TensorPrimitive<DeterministicBackend<B>> {
    match tensor {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

/// The decorator's float-or-quantized argument, for `B`.
pub(crate) fn inner_primitive<B: Backend>(
    tensor: TensorPrimitive<DeterministicBackend<B>>,
) -> TensorPrimitive<B> {
    match tensor {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

/// The decorator's quantization parameters, for `B`.
pub(crate) fn inner_qparams<B: Backend>(
    params: QuantizationParametersPrimitive<DeterministicBackend<B>>,
) -> QuantizationParametersPrimitive<B> {
    QuantizationParametersPrimitive {
        scales: params.scales,
    }
}
