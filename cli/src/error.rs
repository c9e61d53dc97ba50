//! The CLI's error: one line on stderr and an exit code (2 = bad input, 1 = runtime failure).
use std::fmt;

/// An error to report and exit with.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub msg: String,
}

impl CliError {
    /// Bad input (arguments, configs, missing or corrupt files): exit code 2.
    pub fn input(msg: impl Into<String>) -> Self {
        CliError {
            code: 2,
            msg: msg.into(),
        }
    }
    /// A failure while running (diverged training, OS error writing outputs): exit code 1.
    pub fn runtime(msg: impl Into<String>) -> Self {
        CliError {
            code: 1,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl From<icl_core_run::RunError> for CliError {
    fn from(e: icl_core_run::RunError) -> Self {
        let code = if e.is_input() { 2 } else { 1 };
        CliError {
            code,
            msg: e.to_string(),
        }
    }
}

impl From<icl_core::Error> for CliError {
    fn from(e: icl_core::Error) -> Self {
        icl_core_run::RunError::from(e).into()
    }
}

/// Result alias for commands.
pub type CliResult<T = ()> = Result<T, CliError>;
