//! `icl predict DIR --input IN.safetensors --out OUT.safetensors`: a trained model's predictions
//! on given prompts (`xs` [n, k, d], `ys` [n, k], f32 or f64). GPT-2 runs: `pred` [n, k], the
//! prediction at every x position; other families: `pred` [n, n_out] at the last x as the query.
use super::common::outln;
use crate::error::CliResult;
use icl_core_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl predict`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder.
    pub dir: PathBuf,
    /// Prompts: a safetensors file with `xs` [n, k, d] and `ys` [n, k].
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Where to write `pred` (f64) as safetensors.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Engine for the predictions (default: the fastest built in).
    #[arg(long)]
    pub engine: Option<String>,
    /// Print {"out", "shape"} as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    let dir = RunDir::new(&a.dir);
    dir.check_run()?;
    let loaded = icl_core_run::checkpoint::load(&dir.model())?;
    let engine = a
        .engine
        .clone()
        .unwrap_or_else(|| icl_core_run::engines::default_engine().to_string());
    let p = icl_core_run::predict::predict_file(&loaded.model, &engine, &a.input, &a.out)?;
    if a.json {
        return outln(
            &serde_json::json!({"out": a.out.display().to_string(), "shape": p.shape}).to_string(),
        );
    }
    outln(&format!("wrote pred {:?} to {}", p.shape, a.out.display()))
}
