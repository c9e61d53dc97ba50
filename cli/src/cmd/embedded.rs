//! `icl embedded --checkpoint FILE`: what the firmware example computes on a microcontroller,
//! on the host (see `examples/firmware`): trains the he2025-mcu config
//! ([`icl_core::embedded::config`]) in f32 with the scalar engine and predicts the first
//! evaluation sequences with the checkpoint; prints one JSON line, the one the firmware prints
//! after `result: `.
use super::common::outln;
use crate::error::CliResult;
use std::path::PathBuf;

/// Arguments of `icl embedded`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The checkpoint the firmware embeds (a `model.safetensors` written by `icl train`).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: PathBuf,
}

pub fn run(a: &Args) -> CliResult {
    outln(&icl_core_run::embedded::report(&a.checkpoint)?)
}
