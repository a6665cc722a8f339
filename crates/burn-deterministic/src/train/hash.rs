//! A fingerprint of a model's parameters, for comparing runs bit for bit.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_deterministic_core::check::ParameterHasher;

/// SHA-256, as 64 lowercase hex digits, over the bytes of every float parameter of `module`:
/// in the order [`Module::visit`] visits them (the order of the fields, depth first, as
/// `#[derive(Module)]` declares them), each parameter's values as its `TensorData` holds them
/// (row-major, in the parameter's dtype, little-endian on every platform Burn runs on).
/// Integer and boolean parameters are not included.
///
/// Two processes that trained the same model from the same seed can compare these strings:
/// equal exactly when every float parameter is bit-identical (up to SHA-256 collisions).
///
/// ```rust
/// # #[cfg(feature = "ndarray")] {
/// use burn::backend::NdArray;
/// use burn::nn::LinearConfig;
/// use burn_deterministic::train::parameter_hash;
///
/// let device = Default::default();
/// let linear = LinearConfig::new(3, 2).init::<NdArray>(&device);
/// let hash = parameter_hash(&linear);
/// assert_eq!(hash.len(), 64);
/// assert_eq!(hash, parameter_hash(&linear.clone()));
/// # }
/// ```
pub fn parameter_hash<B: Backend, M: Module<B>>(module: &M) -> String {
    struct Collect(ParameterHasher);
    impl<B: Backend> ModuleVisitor<B> for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0.update(param.val().into_data().as_bytes());
        }
    }
    let mut collect = Collect(ParameterHasher::new());
    module.visit(&mut collect);
    collect.0.finish()
}
