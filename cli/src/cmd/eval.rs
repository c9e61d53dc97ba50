//! `icl eval DIR`: Monte Carlo risk of the trained model and the classical baselines at test
//! lengths L' (length generalisation, He et al. 2025 figure 3).
use super::common::{outln, parse_usize_list};
use crate::error::CliResult;
use icl_run::eval::{eval_run, EvalOptions};
use icl_run::summary::pretty;
use icl_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder (from `icl train` or `icl import`).
    pub dir: PathBuf,
    /// Test context lengths L', comma-separated.
    #[arg(long, default_value = "10,20,40,100")]
    pub lengths: String,
    /// Monte Carlo samples per length (>= 2).
    #[arg(long, default_value_t = 20_000)]
    pub samples: usize,
    /// Seed of the evaluation streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Engine for the model's predictions.
    #[arg(long)]
    pub engine: Option<String>,
    /// Print JSON: {"rows": [{"estimator", "L", "risk", "stderr"}], ...}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    let opts = EvalOptions {
        lengths: parse_usize_list("--lengths", &a.lengths)?,
        samples: a.samples,
        seed: a.seed,
        engine: a.engine.clone(),
    };
    let res = eval_run(&RunDir::new(&a.dir), &opts)?;
    if a.json {
        return outln(&pretty(&res));
    }
    let mut s = format!(
        "{:<14} {:>6} {:>10} {:>10}\n",
        "estimator", "L", "risk", "stderr"
    );
    for r in &res.rows {
        s.push_str(&format!(
            "{:<14} {:>6} {:>10.5} {:>10.5}\n",
            r.estimator, r.len, r.risk, r.stderr
        ));
    }
    super::common::out(&s)
}
