//! Typed errors. Every fallible function in the core returns [`Result`].
use alloc::string::String;

/// What went wrong. The message names the offending key, value or shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A configuration value is out of range or malformed (`task.d = 0`, `sigma2 = NaN`, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A configuration key that does not exist.
    #[error("unknown key: {0}")]
    UnknownKey(String),
    /// A preset name that does not exist.
    #[error("unknown preset: {0}")]
    UnknownPreset(String),
    /// Buffer or tensor sizes do not agree.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A NaN or infinite value where a finite one is required.
    #[error("non-finite value: {0}")]
    NonFinite(String),
    /// A numerical failure (singular matrix, non-positive-definite covariance, diverged training).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// An option combination that is not implemented.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A checkpoint or serialised config that cannot be decoded.
    #[error("bad checkpoint: {0}")]
    Checkpoint(String),
    /// An argument of a computation (a theory quantity's parameter, an option) that is out of
    /// range or malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A name (of a theory quantity, an engine, ...) that does not exist.
    #[error("unknown name: {0}")]
    UnknownName(String),
    /// A size (a parameter, a file, a count) that would need more memory or more steps than the
    /// budget allows ([`crate::budget`]), or memory that is not available; the message names the
    /// parameters that drive it.
    #[error("too large: {0}")]
    TooLarge(String),
}

/// Result alias used throughout the core.
pub type Result<T> = core::result::Result<T, Error>;
