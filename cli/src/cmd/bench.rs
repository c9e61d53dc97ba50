//! `icl bench` (issue 3 fills this in).
use crate::error::{CliError, CliResult};

/// Arguments of `icl bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Engine to measure.
    #[arg(long)]
    pub engine: Option<String>,
}

pub fn run(_a: &Args) -> CliResult {
    Err(CliError::input("icl bench is not built yet"))
}
