//! The conformance suites, written once and run by every engine (burn's `testgen_all!`,
//! candle's `test_device!`): each family's kernels against the scalar reference.
//!
//! * [`attention`]: one-layer attention ([`crate::engine_conformance!`]);
//! * [`stack`]: multi-layer transformer stacks ([`crate::stack_conformance!`]).
pub mod attention;
pub mod stack;
