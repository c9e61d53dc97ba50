//! `icl theory` (issue 4 fills this in).
use crate::error::{CliError, CliResult};

/// Arguments of `icl theory`.
#[derive(clap::Args)]
pub struct Args {
    /// Quantity name.
    pub name: Option<String>,
}

pub fn run(_a: &Args) -> CliResult {
    Err(CliError::input("icl theory is not built yet"))
}
