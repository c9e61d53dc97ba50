//! # icl-ffi
//!
//! The C and C++ API of icl, for simulators that train or query an in-context learner inside
//! their own loop.
//!
//! * C: `include/icl.h` (generated from this crate by cbindgen; a test keeps it current). Opaque
//!   handles `icl_config`, `icl_task`, `icl_model`, `icl_trainer` with `_new`/`_free` pairs,
//!   caller-owned buffers with explicit lengths, an [`icl_status`] from every fallible function
//!   and a thread-local message from `icl_last_error()`. Nothing unwinds across the boundary.
//! * C++: `include/icl.hpp`, a `cxx` bridge in namespace `icl` (classes owned by `rust::Box`,
//!   failures thrown as `rust::Error`). It lives in the static library.
//!
//! The Rust side of both is [`handles`]: safe methods on the handle types, shared by the two
//! layers, so that C, C++ and Rust callers get the same numbers.
pub mod c;
pub mod cxx;
pub mod handles;
pub mod status;

pub use c::*;
pub use c::{config::*, eval::*, model::*, sweep::*, task::*, theory::*, train::*, trainer::*};
pub use handles::{icl_config, icl_model, icl_task, icl_trainer, HasModel};
pub use status::icl_status;
