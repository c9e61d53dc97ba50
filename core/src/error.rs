//! Typed errors. Every fallible function in the core returns [`Result`].
use alloc::string::String;
use core::fmt;

/// What went wrong. The message names the offending key, value or shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A configuration value is out of range or malformed (`task.d = 0`, `sigma2 = NaN`, ...).
    InvalidConfig(String),
    /// A configuration key that does not exist.
    UnknownKey(String),
    /// A preset name that does not exist.
    UnknownPreset(String),
    /// Buffer or tensor sizes do not agree.
    Shape(String),
    /// A NaN or infinite value where a finite one is required.
    NonFinite(String),
    /// A numerical failure (singular matrix, non-positive-definite covariance, diverged training).
    Numerical(String),
    /// An option combination that is not implemented.
    Unsupported(String),
    /// A checkpoint or serialised config that cannot be decoded.
    Checkpoint(String),
    /// An argument of a computation (a theory quantity's parameter, an option) that is out of
    /// range or malformed.
    InvalidArgument(String),
    /// A name (of a theory quantity, an engine, ...) that does not exist.
    UnknownName(String),
    /// A size (a parameter, a file, a count) that would need more memory or more steps than the
    /// budget allows ([`crate::budget`]), or memory that is not available; the message names the
    /// parameters that drive it.
    TooLarge(String),
}

/// Result alias used throughout the core.
pub type Result<T> = core::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig(m) => write!(f, "invalid configuration: {m}"),
            Error::UnknownKey(m) => write!(f, "unknown key: {m}"),
            Error::UnknownPreset(m) => write!(f, "unknown preset: {m}"),
            Error::Shape(m) => write!(f, "shape mismatch: {m}"),
            Error::NonFinite(m) => write!(f, "non-finite value: {m}"),
            Error::Numerical(m) => write!(f, "numerical failure: {m}"),
            Error::Unsupported(m) => write!(f, "unsupported: {m}"),
            Error::Checkpoint(m) => write!(f, "bad checkpoint: {m}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::UnknownName(m) => write!(f, "unknown name: {m}"),
            Error::TooLarge(m) => write!(f, "too large: {m}"),
        }
    }
}

impl core::error::Error for Error {}
