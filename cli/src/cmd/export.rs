//! `icl export DIR --torch FILE [--legacy-buffers]`: a GPT-2 run as a state_dict that loads into
//! Garg et al.'s `TransformerModel` with `load_state_dict(strict=True)` (safetensors, f32).
use super::common::outln;
use crate::error::CliResult;
use icl_core_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder (a GPT-2 run: model.arch = gpt2).
    pub dir: PathBuf,
    /// Where to write the state_dict (safetensors; load it with safetensors.torch.load_file).
    #[arg(long, value_name = "FILE")]
    pub torch: PathBuf,
    /// Add the per-layer mask buffers `attn.bias` and `attn.masked_bias` of the transformers
    /// versions Garg et al. pinned (4.17); current versions refuse them under strict loading.
    #[arg(long)]
    pub legacy_buffers: bool,
}

pub fn run(a: &Args) -> CliResult {
    icl_core_run::torch::export_run(&RunDir::new(&a.dir), &a.torch, a.legacy_buffers)?;
    outln(&format!("wrote {}", a.torch.display()))
}
