//! `icl import --torch FILE.safetensors --preset NAME --out DIR`: a run folder from a PyTorch
//! state_dict in the reference code's layout (`q_proj.weight` [H(d+1), d+1], `k_proj.weight`,
//! `v_proj.weight`, `o_proj.weight` [n_out, H(d+1)]).
use super::common::{config_json, json, write_text, ConfigArgs};
use crate::error::{CliError, CliResult};
use icl_io::{AnyModel, RunDir};
use serde_json::json;
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
    /// Replace an existing run folder's files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: &Args) -> CliResult {
    let cfg = a.cfg.build()?;
    let model = icl_io::import_torch(&a.torch, &cfg)?;
    let dir = RunDir::new(&a.out);
    if dir.model().exists() && !a.force {
        return Err(CliError::input(format!(
            "{} already holds a run (use --force to replace it)",
            a.out.display()
        )));
    }
    dir.create()?;
    write_text(&dir.config(), &cfg.to_toml())?;
    match &model {
        AnyModel::F32(m) => icl_io::save_model(&dir.model(), m, &cfg, 0)?,
        AnyModel::F64(m) => icl_io::save_model(&dir.model(), m, &cfg, 0)?,
    }
    let summary =
        json!({"imported_from": a.torch.display().to_string(), "config": config_json(&cfg)});
    write_text(&dir.summary(), &json(&summary))?;
    println!("{}", dir.summary().display());
    Ok(())
}
