//! The scalar types the core computes in.
use half::{bf16, f16};
use nalgebra::RealField;

/// A real scalar the models and estimators are generic over: `f32` or `f64`.
pub trait Scalar: RealField + Copy + Default + 'static {
    /// Name used in configs and checkpoints (`"f32"`, `"f64"`).
    const NAME: &'static str;
    /// Lossy conversion from `f64`.
    fn of(x: f64) -> Self;
    /// Widening conversion to `f64`.
    fn to_f64(self) -> f64;
    /// e^x computed by the `libm` crate, so results do not depend on which other crates are built
    /// alongside the core (a `std` feature of `num-traits` would switch to the platform's libm).
    fn exp_l(self) -> Self;
    /// tanh x computed by the `libm` crate (see [`Scalar::exp_l`]).
    fn tanh_l(self) -> Self;
    /// `true` when the value is neither NaN nor infinite.
    fn finite(self) -> bool {
        self.to_f64().is_finite()
    }
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn exp_l(self) -> Self {
        libm::expf(self)
    }
    #[inline(always)]
    fn tanh_l(self) -> Self {
        libm::tanhf(self)
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn exp_l(self) -> Self {
        libm::exp(self)
    }
    #[inline(always)]
    fn tanh_l(self) -> Self {
        libm::tanh(self)
    }
}

/// Store values as IEEE half precision (for compact batches and checkpoints).
pub fn to_f16_storage<T: Scalar>(xs: &[T]) -> alloc::vec::Vec<f16> {
    xs.iter().map(|x| f16::from_f64(x.to_f64())).collect()
}

/// Store values as bfloat16.
pub fn to_bf16_storage<T: Scalar>(xs: &[T]) -> alloc::vec::Vec<bf16> {
    xs.iter().map(|x| bf16::from_f64(x.to_f64())).collect()
}

/// Widen half-precision storage back to a compute scalar.
pub fn from_f16_storage<T: Scalar>(xs: &[f16]) -> alloc::vec::Vec<T> {
    xs.iter().map(|x| T::of(x.to_f64())).collect()
}

/// Fail with [`crate::Error::NonFinite`] if any value is NaN or infinite.
pub fn check_finite<T: Scalar>(what: &str, xs: &[T]) -> crate::Result<()> {
    match xs.iter().position(|x| !x.finite()) {
        None => Ok(()),
        Some(i) => Err(crate::Error::NonFinite(alloc::format!(
            "{what}[{i}] = {} is not finite",
            xs[i].to_f64()
        ))),
    }
}
