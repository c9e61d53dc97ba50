//! The conformance suites, written once and run by every engine (burn's `testgen_all!`,
//! candle's `test_device!`): each family's kernels against the scalar reference.
//!
//! * [`attention`]: one-layer attention;
//! * [`stack`]: multi-layer transformer stacks;
//! * [`gpt2`]: GPT-2 in-context learners (Garg et al. 2022).
//!
//! An engine crate instantiates every suite with one macro, [`crate::engine_conformance!`]:
//!
//! ```ignore
//! icl_core::engine_conformance!(simd_f64, f64, 1e-10, || -> Box<dyn Engine<f64>> {
//!     Box::new(Simd::default())
//! });
//! ```
//!
//! For each family the engine hands out kernels for, the family's suite runs against the scalar
//! reference; for each family it refuses, a test checks that the refusal is
//! [`crate::Error::Unsupported`]. Tolerances are norm-wise relative differences
//! ||a - b|| / ||b||; training trajectories get 100 times the tolerance.
pub mod attention;
pub mod gpt2;
pub mod stack;

use crate::{Error, Result};
use alloc::format;
use alloc::string::String;

/// Whether a family's kernels were refused as an engine must refuse them: `Ok(false)` when the
/// engine runs the family, `Ok(true)` when it refuses it with [`Error::Unsupported`], `Err` for
/// any other error.
pub fn refused<K: ?Sized>(r: &Result<alloc::boxed::Box<K>>) -> core::result::Result<bool, String> {
    match r {
        Ok(_) => Ok(false),
        Err(Error::Unsupported(_)) => Ok(true),
        Err(e) => Err(format!(
            "the engine neither runs nor refuses the family: {e}"
        )),
    }
}

/// Instantiate every family's conformance suite for an engine: `engine_conformance!(name, T,
/// tol, make)` with `make` a closure returning `Box<dyn Engine<T>>`. For `f64`, the attention
/// kernels' finite-difference check is added.
#[macro_export]
macro_rules! engine_conformance {
    ($name:ident, f64, $tol:expr, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::engine_conformance!(@common f64, $tol, $make);
            #[test]
            fn attention_gradient_matches_finite_differences() {
                $crate::engine_conformance!(@attention $make, |make| {
                    $crate::conformance::attention::gradient_matches_fd(make)
                });
            }
        }
    };
    ($name:ident, $t:ty, $tol:expr, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::engine_conformance!(@common $t, $tol, $make);
        }
    };
    // run `suite` on the engine's attention kernels, or check the engine's refusal
    (@attention $make:expr, $suite:expr) => {{
        let engine = ($make)();
        let first = engine.attention();
        if !$crate::conformance::refused(&first).unwrap() {
            drop(first);
            let make = || engine.attention().unwrap();
            ($suite)(&make).unwrap();
        }
    }};
    (@stack $make:expr, $suite:expr) => {{
        let engine = ($make)();
        let first = engine.stack();
        if !$crate::conformance::refused(&first).unwrap() {
            drop(first);
            let make = || engine.stack().unwrap();
            ($suite)(&make).unwrap();
        }
    }};
    (@gpt2 $make:expr, $suite:expr) => {{
        let engine = ($make)();
        let first = engine.gpt2();
        if !$crate::conformance::refused(&first).unwrap() {
            drop(first);
            let make = || engine.gpt2().unwrap();
            ($suite)(&make).unwrap();
        }
    }};
    (@common $t:ty, $tol:expr, $make:expr) => {
        #[test]
        fn attention_matches_the_scalar_reference() {
            $crate::engine_conformance!(@attention $make, |make| {
                $crate::conformance::attention::matches_reference::<$t>(make, $tol)
            });
        }
        #[test]
        fn attention_sampling_matches_the_streams() {
            $crate::engine_conformance!(@attention $make, |make| {
                $crate::conformance::attention::sampling_matches_streams::<$t>(make, $tol)
            });
        }
        #[test]
        fn attention_predicts_at_any_length() {
            $crate::engine_conformance!(@attention $make, |make| {
                $crate::conformance::attention::predicts_any_length::<$t>(make, $tol)
            });
        }
        #[test]
        fn attention_trains_like_the_scalar_reference() {
            $crate::engine_conformance!(@attention $make, |make| {
                $crate::conformance::attention::trains_like_reference::<$t>(make, 100.0 * $tol)
            });
        }
        #[test]
        fn stack_loss_grad_matches_reference() {
            $crate::engine_conformance!(@stack $make, |make| {
                $crate::conformance::stack::loss_grad_matches::<$t>(make, $tol)
            });
        }
        #[test]
        fn stack_forward_matches_reference() {
            $crate::engine_conformance!(@stack $make, |make| {
                $crate::conformance::stack::forward_matches::<$t>(make, $tol)
            });
        }
        #[test]
        fn stack_repeatable() {
            $crate::engine_conformance!(@stack $make, |make| {
                $crate::conformance::stack::repeatable::<$t>(make)
            });
        }
        #[test]
        fn gpt2_loss_grad_matches_reference() {
            $crate::engine_conformance!(@gpt2 $make, |make| {
                $crate::conformance::gpt2::loss_grad_matches::<$t>(make, $tol)
            });
        }
        #[test]
        fn gpt2_predict_matches_reference() {
            $crate::engine_conformance!(@gpt2 $make, |make| {
                $crate::conformance::gpt2::predict_matches::<$t>(make, $tol)
            });
        }
        #[test]
        fn gpt2_repeatable() {
            $crate::engine_conformance!(@gpt2 $make, |make| {
                $crate::conformance::gpt2::repeatable::<$t>(make)
            });
        }
        #[test]
        fn gpt2_refuses_bad_input() {
            $crate::engine_conformance!(@gpt2 $make, |make| {
                $crate::conformance::gpt2::refuses_bad_input::<$t>(make)
            });
        }
    };
}
