//! `icl import --torch FILE.safetensors --preset NAME --out DIR`: a run folder from a PyTorch
//! state_dict in the reference code's layout (`q_proj.weight` [H(d+1), d+1], `k_proj.weight`,
//! `v_proj.weight`, `o_proj.weight` [n_out, H(d+1)]).
use super::common::{outln, ConfigArgs};
use crate::error::CliResult;
use std::path::PathBuf;

/// Arguments of `icl import`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The state_dict saved with `safetensors.torch.save_file`.
    #[arg(long, value_name = "FILE")]
    pub torch: PathBuf,
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Output run folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace an existing run folder.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: &Args) -> CliResult {
    let cfg = a.cfg.build()?;
    let dir = icl_core_run::train::import(&a.torch, &cfg, &a.out, a.force)?;
    outln(&dir.summary().display().to_string())
}
