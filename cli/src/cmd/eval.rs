//! `icl eval DIR`: Monte Carlo risk of the trained model and the classical baselines at test
//! lengths L' (length generalisation, He et al. 2025 figure 3).
use super::common::{json, parse_usize_list};
use crate::engines::{default_engine, EngineScalar};
use crate::error::CliResult;
use icl_core::config::{Config, TaskKind};
use icl_core::estimator::Estimator;
use icl_core::eval::mc_risk;
use icl_core::task::Task;
use icl_core::theory::he2025::Setting;
use icl_io::{AnyModel, RunDir};
use serde_json::json;
use std::path::PathBuf;

/// Arguments of `icl eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder (from `icl train` or `icl import`).
    pub dir: PathBuf,
    /// Test context lengths L', comma-separated.
    #[arg(long, default_value = "10,20,40,100")]
    pub lengths: String,
    /// Monte Carlo samples per length.
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

/// The baselines of the issue: vanilla and debiased GD at eta* (of the training length),
/// Bayes ridge (lambda = d sigma^2), OLS where L' > d + 1, single-head NW at the L~ optimum.
pub fn baselines(cfg: &Config, len: usize) -> CliResult<Vec<(String, Estimator)>> {
    let (d, s2) = (cfg.task.d as f64, cfg.task.sigma2);
    let theory = Setting::new(cfg.task.d, cfg.task.len, s2)?;
    let eta = theory.eta_star();
    let (nw_omega, nw_mu) = theory.nw_optimum();
    let mut v = vec![
        ("vanilla_gd".to_string(), Estimator::VanillaGd { eta }),
        ("debiased_gd".to_string(), Estimator::DebiasedGd { eta }),
        ("ridge".to_string(), Estimator::Ridge { lambda: d * s2 }),
        (
            "nw".to_string(),
            Estimator::Nw {
                omega: nw_omega,
                mu: nw_mu,
            },
        ),
    ];
    if len > cfg.task.d + 1 {
        v.push(("ols".to_string(), Estimator::Ols));
    }
    if cfg.task.kind == TaskKind::MultiTask {
        v.retain(|(n, _)| n != "nw");
    }
    Ok(v)
}

pub fn run(a: &Args) -> CliResult {
    let lengths = parse_usize_list("--lengths", &a.lengths)?;
    if a.samples < 2 {
        return Err(crate::error::CliError::input(
            "--samples must be at least 2",
        ));
    }
    let (cfg, model, _) = RunDir::new(&a.dir).load()?;
    let engine = a
        .engine
        .clone()
        .unwrap_or_else(|| default_engine().to_string());
    let task = Task::new(&cfg)?;
    let mut rows = Vec::new();
    for &len in &lengths {
        let base = baselines(&cfg, len)?;
        let ests: Vec<Estimator> = base.iter().map(|(_, e)| e.clone()).collect();
        let res = match &model {
            AnyModel::F32(m) => eval_one::<f32>(m, &engine, &task, len, a, &ests)?,
            AnyModel::F64(m) => eval_one::<f64>(m, &engine, &task, len, a, &ests)?,
        };
        let names = std::iter::once("model".to_string()).chain(base.into_iter().map(|(n, _)| n));
        for (name, r) in names.zip(res) {
            rows.push(json!({"estimator": name, "L": len, "risk": r.risk, "stderr": r.stderr}));
        }
    }
    if a.json {
        println!(
            "{}",
            json(&json!({"rows": rows, "samples": a.samples, "seed": a.seed, "engine": engine}))
        );
    } else {
        println!(
            "{:<14} {:>6} {:>10} {:>10}",
            "estimator", "L", "risk", "stderr"
        );
        for r in &rows {
            println!(
                "{:<14} {:>6} {:>10.5} {:>10.5}",
                r["estimator"].as_str().unwrap_or(""),
                r["L"],
                r["risk"].as_f64().unwrap_or(f64::NAN),
                r["stderr"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    Ok(())
}

fn eval_one<T: EngineScalar>(
    m: &icl_core::Model<T>,
    engine: &str,
    task: &Task,
    len: usize,
    a: &Args,
    ests: &[Estimator],
) -> CliResult<Vec<icl_core::eval::RiskEstimate>> {
    let mut eng = T::engine(engine)?;
    Ok(mc_risk(
        task,
        len,
        a.samples,
        a.seed,
        Some((m, eng.as_mut())),
        ests,
    )?)
}
