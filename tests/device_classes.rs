//! Any Burn backend can be wrapped, with no bound beyond `Backend`; devices are classified by
//! type, and a user marks a device type of their own crate (or overrides a built-in one) with
//! `mark_device`. One test in its own binary: marking is process-wide.
#![cfg(feature = "ndarray")]

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::backend::Backend;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use burn::tensor::{Tensor, TensorData};
use burn_deterministic::{
    device_profile, mark_device, DeterministicBackend, DeviceKind, DeviceProfile, OrderHazards,
};

/// A generic function names the decorator with `B: Backend` alone.
fn bilinear_upsample<B: Backend>(values: &[f32], device: &B::Device) -> TensorData {
    let x = Tensor::<DeterministicBackend<B>, 4>::from_data(
        TensorData::new(values.to_vec(), [1, 1, 5, 7]),
        device,
    );
    let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
    interpolate(x, [11, 13], options).into_data()
}

/// A device type defined in this crate, unknown to burn-deterministic.
#[derive(Debug)]
struct MyDevice;

#[test]
fn devices_are_classified_by_type_and_users_can_mark_their_own() {
    // Unknown types are accelerators with every hazard: always correct, maybe slower.
    assert_eq!(device_profile(&MyDevice), DeviceProfile::UNKNOWN);
    mark_device::<MyDevice>(DeviceProfile::CPU);
    assert_eq!(device_profile(&MyDevice).kind, DeviceKind::Cpu);

    // ndarray is built in: a CPU device, so under `auto` the forward is ndarray's own.
    let device = NdArrayDevice::Cpu;
    let profile = device_profile(&device);
    assert_eq!(profile.kind, DeviceKind::Cpu);
    assert!(profile.order_hazards.deform_conv2d_input_grad);
    let values: Vec<f32> = (0..35).map(|i| ((i * 37) % 11) as f32 / 7.0).collect();
    let native = {
        let x =
            Tensor::<NdArray, 4>::from_data(TensorData::new(values.clone(), [1, 1, 5, 7]), &device);
        let options = InterpolateOptions::new(InterpolateMode::Bilinear).with_align_corners(false);
        interpolate(x, [11, 13], options).into_data()
    };
    assert_eq!(
        bilinear_upsample::<NdArray>(&values, &device).as_bytes(),
        native.as_bytes()
    );

    // Marked as an accelerator, the same device gets the matmul forward: the same function
    // within f32 rounding, but not ndarray's bits.
    mark_device::<NdArrayDevice>(DeviceProfile {
        kind: DeviceKind::Accelerator,
        order_hazards: OrderHazards::NONE,
        ..device_profile(&device)
    });
    assert_eq!(device_profile(&device).kind, DeviceKind::Accelerator);
    let rewritten = bilinear_upsample::<NdArray>(&values, &device);
    assert_ne!(
        rewritten.as_bytes(),
        native.as_bytes(),
        "still the native forward"
    );
    let (rewritten, native) = (
        rewritten.to_vec::<f32>().unwrap(),
        native.to_vec::<f32>().unwrap(),
    );
    for (a, b) in rewritten.iter().zip(&native) {
        assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "{a} vs {b}");
    }
}
