//! Burn 0.21 backends beyond the built-in device profiles, wrapped with no extra bound.
//!
//! Router, Dispatch and Remote run on this machine (over ndarray and flex): their devices are
//! unknown to the decorator, so it takes them as accelerators (matmul forward and backward,
//! every fixed-order rewrite), and a bilinear upsample trains through
//! `Autodiff<DeterministicBackend<…>>` — with the same bits in two runs in one process (not
//! compared across processes), and to the losses of the same fit on the
//! plain CPU backend underneath. Where the plain backend cannot train it (ndarray underneath),
//! the test shows the panic. ROCm builds here (HIP is loaded at run time) but no AMD GPU is
//! present: its alias is compile-checked, and its device profile is CubeCL's. (`burn/rocm`
//! turns on CubeCL autotune for the whole build, so CI runs the ROCm test in its autotune
//! build, not in the README's test command.)

// Each module needs the suite's CPU backends; the features that name the backend gate it.
#![cfg(all(feature = "ndarray", feature = "flex"))]
// The fit helpers serve the router, dispatch and remote modules; a build with only `rocm` (CI's
// autotune build) leaves them unused.
#![cfg_attr(
    not(any(feature = "router", feature = "dispatch", feature = "remote")),
    allow(dead_code, unused_imports)
)]

use burn::backend::Autodiff;
use burn::tensor::backend::AutodiffBackend;
use burn_deterministic::{DeterministicBackend, DeterministicConfig, RewritePolicy};
use burn_deterministic_suite::harness::{configured, fit_bilinear_upsample, panic_message, Fit};

/// The fit on `B`'s device, run twice: the decorator gives the same bits both times.
fn reproducible_fit<B: AutodiffBackend>(device: &B::Device) -> Fit {
    let fit = fit_bilinear_upsample::<B>(device);
    assert!(
        fit.losses.last().unwrap() < &(fit.losses[0] * 0.8),
        "the loss did not fall: {:?}",
        fit.losses
    );
    assert_eq!(fit, fit_bilinear_upsample::<B>(device), "two runs differ");
    fit
}

/// The same fit on a built-in CPU backend through the decorator, with the matmul forward that
/// an unknown device gets (`always`): the reference for a backend that runs on that CPU backend.
fn reference_fit<B: AutodiffBackend>(device: &B::Device) -> Fit {
    let always = DeterministicConfig::default().with_policy(RewritePolicy::Always);
    configured(always, || fit_bilinear_upsample::<B>(device))
}

/// Losses equal up to f32 rounding: the unknown device also gets the fixed-order `mean`, whose
/// additions are ordered differently from the CPU backend's own.
fn assert_same_losses(fit: &Fit, reference: &Fit) {
    for (step, (a, b)) in fit.losses.iter().zip(&reference.losses).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 * b.abs().max(1e-3),
            "step {step}: {a} vs {b}\n{:?}\n{:?}",
            fit.losses,
            reference.losses
        );
    }
}

/// A generic function names the decorator over any `B: Backend`, with no other bound.
fn backend_name<B: burn::tensor::backend::Backend>(device: &B::Device) -> String {
    <DeterministicBackend<B> as burn::tensor::backend::Backend>::name(device)
}

#[cfg(feature = "router")]
mod router {
    use super::*;
    use burn::backend::ndarray::NdArrayDevice;
    use burn::backend::router::duo::MultiDevice;
    use burn::backend::{Flex, NdArray, Router};
    use burn_deterministic_suite::processes::run_child_unchecked;

    type Routed = Router<(NdArray, Flex)>;

    fn ndarray_device() -> MultiDevice<NdArray, Flex> {
        MultiDevice::B1(NdArrayDevice::Cpu)
    }

    #[test]
    #[ignore = "run in a child process by plain_router_over_ndarray_cannot_train_a_bilinear_upsample"]
    fn child_trains_plain_router() {
        fit_bilinear_upsample::<Autodiff<Routed>>(&ndarray_device());
    }

    /// Plain `Router` over ndarray panics in ndarray's backward while the router's runner holds
    /// its lock; the poisoned lock then panics in a destructor and aborts the process, so the
    /// failure is observed from a separate process.
    #[test]
    fn plain_router_over_ndarray_cannot_train_a_bilinear_upsample() {
        let (succeeded, child) =
            run_child_unchecked("router::child_trains_plain_router", "router", &[]);
        assert!(!succeeded, "plain Router trained:\n{}", child.stdout);
        assert!(
            child
                .stderr
                .contains("bilinear interpolation backward is not supported"),
            "{}",
            child.stderr
        );
    }

    #[test]
    fn router_trains_through_the_decorator() {
        let fit = reproducible_fit::<Autodiff<DeterministicBackend<Routed>>>(&ndarray_device());
        let reference =
            reference_fit::<Autodiff<DeterministicBackend<NdArray>>>(&NdArrayDevice::Cpu);
        assert_same_losses(&fit, &reference);
        assert!(backend_name::<Routed>(&ndarray_device()).starts_with("deterministic<"));
    }
}

#[cfg(feature = "dispatch")]
mod dispatch {
    use super::*;
    use burn::backend::ndarray::NdArrayDevice;
    use burn::backend::NdArray;
    use burn::{Dispatch, DispatchDevice};

    fn ndarray_device() -> DispatchDevice {
        DispatchDevice::NdArray(NdArrayDevice::Cpu)
    }

    #[test]
    fn plain_dispatch_over_ndarray_cannot_train_a_bilinear_upsample() {
        let result = std::panic::catch_unwind(|| {
            fit_bilinear_upsample::<Autodiff<Dispatch>>(&ndarray_device())
        });
        let message = panic_message(result);
        assert!(message.contains("not supported"), "{message}");
    }

    /// The decorator inside Burn's `Autodiff`, on a plain dispatch device.
    #[test]
    fn dispatch_trains_through_the_decorator() {
        let fit = reproducible_fit::<Autodiff<DeterministicBackend<Dispatch>>>(&ndarray_device());
        let reference =
            reference_fit::<Autodiff<DeterministicBackend<NdArray>>>(&NdArrayDevice::Cpu);
        assert_same_losses(&fit, &reference);
    }

    /// Dispatch's own autodiff (an autodiff device) with the decorator outside it: the decorator
    /// is an `AutodiffBackend` when `B` is one, and builds the forward from matmuls that
    /// Dispatch's autodiff differentiates.
    #[test]
    fn dispatch_autodiff_device_trains_with_the_decorator_outside() {
        let device = DispatchDevice::autodiff(ndarray_device());
        let plain = std::panic::catch_unwind(|| fit_bilinear_upsample::<Dispatch>(&device));
        assert!(panic_message(plain).contains("not supported"));
        let fit = reproducible_fit::<DeterministicBackend<Dispatch>>(&device);
        let reference =
            reference_fit::<Autodiff<DeterministicBackend<NdArray>>>(&NdArrayDevice::Cpu);
        assert_same_losses(&fit, &reference);
    }
}

#[cfg(feature = "remote")]
mod remote {
    use super::*;
    use burn::backend::remote::RemoteDevice;
    use burn::backend::{Flex, RemoteBackend};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    /// A flex server on a free local port, in a thread of this process; its device.
    fn flex_server() -> RemoteDevice {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free local port")
            .port();
        std::thread::spawn(move || burn::server::start_websocket::<Flex>(Default::default(), port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the remote server did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        RemoteDevice::new(&format!("ws://127.0.0.1:{port}"))
    }

    /// Flex has a native bilinear backward, so the plain remote backend trains too; the
    /// decorator gives the same losses (two runs in one process, same bits), over the network.
    #[test]
    fn remote_trains_through_the_decorator() {
        let device = flex_server();
        let fit = reproducible_fit::<Autodiff<DeterministicBackend<RemoteBackend>>>(&device);
        let reference = reference_fit::<Autodiff<DeterministicBackend<Flex>>>(&Default::default());
        assert_same_losses(&fit, &reference);
        let plain = fit_bilinear_upsample::<Autodiff<RemoteBackend>>(&device);
        assert_same_losses(&plain, &reference);
    }
}

#[cfg(feature = "rocm")]
mod rocm {
    use super::*;
    use burn::backend::rocm::RocmDevice;
    use burn::backend::Rocm;
    use burn_deterministic::{device_profile, DeviceKind, DeviceProfile, OrderHazards};

    /// The training alias compiles (nothing runs: no AMD GPU here).
    #[allow(dead_code)]
    fn train_on_rocm(device: &RocmDevice) -> Fit {
        fit_bilinear_upsample::<Autodiff<DeterministicBackend<Rocm>>>(device)
    }

    /// ROCm devices get CubeCL's profile. And burn-rocm 0.21 depends on burn-cubecl's default
    /// features, autotune among them, so by Cargo's feature unification every build with
    /// `burn/rocm` autotunes every CubeCL backend: the decorator sees it, and announces it.
    #[test]
    fn rocm_devices_have_the_cubecl_profile_and_autotune() {
        let profile = device_profile(&RocmDevice::default());
        assert_ne!(profile, DeviceProfile::UNKNOWN);
        assert_eq!(profile.kind, DeviceKind::Accelerator);
        assert_eq!(profile.order_hazards, OrderHazards::CUBECL);
        assert!(profile.autotuned);
        #[cfg(feature = "wgpu")]
        assert!(device_profile(&burn::backend::wgpu::WgpuDevice::DefaultDevice).autotuned);
    }
}
