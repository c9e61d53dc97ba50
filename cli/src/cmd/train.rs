//! `icl train`: train a model and write a run folder
//! (config.toml, model.safetensors, metrics.csv, snapshots.safetensors, loss.svg, summary.json).
use super::common::{config_json, json, progress, write_text, ConfigArgs};
use crate::engines::{default_engine, EngineScalar};
use crate::error::{CliError, CliResult};
use crate::plot::{lines_svg, Series};
use icl_core::analysis::analyze;
use icl_core::config::{Config, Dtype};
use icl_core::eval::mc_risk;
use icl_core::train::Trainer;
use icl_io::RunDir;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `icl train`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Number of optimiser steps (overrides train.steps).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Random seed (overrides train.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Engine: the fastest built in by default (see `icl bench`).
    #[arg(long)]
    pub engine: Option<String>,
    /// Output run folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the files of an existing run folder.
    #[arg(long)]
    pub force: bool,
    /// Monte Carlo samples for the final risk at the training length in summary.json (0: skip).
    #[arg(long, default_value_t = 20_000)]
    pub eval_samples: usize,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Build the config of `icl train` from its flags.
pub fn config_of(a: &Args) -> CliResult<Config> {
    let mut cfg = a.cfg.build()?;
    if let Some(s) = a.steps {
        cfg.train.steps = s;
    }
    if let Some(s) = a.seed {
        cfg.train.seed = s;
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn run(a: &Args) -> CliResult {
    let cfg = config_of(a)?;
    let engine = a
        .engine
        .clone()
        .unwrap_or_else(|| default_engine().to_string());
    let dir = RunDir::new(&a.out);
    if dir.model().exists() && !a.force {
        return Err(CliError::input(format!(
            "{} already holds a run (use --force to replace it)",
            a.out.display()
        )));
    }
    if a.out.exists() && !a.out.is_dir() {
        return Err(CliError::input(format!(
            "{} exists and is not a folder",
            a.out.display()
        )));
    }
    if cfg.task.kind == icl_core::config::TaskKind::Eigs {
        // Zhang et al. (2025) protocol: fixed set / NTP / plateaus (cmd/train_linattn.rs)
        return super::train_linattn::run(a, &cfg, &engine, &dir);
    }
    match cfg.train.dtype {
        Dtype::F32 => train::<f32>(a, &cfg, &engine, &dir),
        Dtype::F64 => train::<f64>(a, &cfg, &engine, &dir),
    }
}

fn train<T: EngineScalar>(a: &Args, cfg: &Config, engine_name: &str, dir: &RunDir) -> CliResult {
    let mut engine = T::engine(engine_name)?;
    let mut tr = Trainer::<T>::new(cfg)?;
    let pb = progress(cfg.train.steps, a.quiet);
    let t0 = Instant::now();
    let mut last = 0u64;
    tr.run(engine.as_mut(), &mut |step, loss| {
        if step - last >= 500 || step == cfg.train.steps {
            pb.set_position(step);
            pb.set_message(format!("loss {loss:.4}"));
            last = step;
        }
        true
    })?;
    let secs = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();

    let circ = tr.model.circuits();
    let rep = analyze(&tr.model.spec, &circ);
    let risk = if a.eval_samples >= 2 {
        let r = mc_risk(
            &tr.task,
            cfg.task.len,
            a.eval_samples,
            cfg.train.seed,
            Some((&tr.model, engine.as_mut())),
            &[],
        )?;
        Some(r[0])
    } else {
        None
    };

    dir.create()?;
    write_text(&dir.config(), &cfg.to_toml())?;
    icl_io::save_model(&dir.model(), &tr.model, cfg, tr.step)?;
    write_text(&dir.metrics(), &icl_io::metrics_csv(&tr.log))?;
    if !tr.snapshots.is_empty() {
        icl_io::save_snapshots(
            &dir.snapshots(),
            &tr.snapshots,
            tr.model.spec.heads,
            tr.model.spec.e(),
        )?;
    }
    let loss_pts: Vec<(f64, f64)> = tr.log.iter().map(|r| (r.step as f64, r.loss)).collect();
    if loss_pts.len() >= 2 {
        let series = vec![Series {
            name: "train loss".into(),
            points: loss_pts,
            dashed: false,
        }];
        lines_svg(
            &dir.dir.join("loss.svg"),
            "training loss",
            "step",
            "MSE",
            &series,
            true,
        )?;
    }
    let final_loss = tr.log.last().map(|r| r.loss).unwrap_or(f64::NAN);
    let summary = json!({
        "preset": if a.cfg.config.is_some() { serde_json::Value::Null } else { json!(a.cfg.preset) },
        "config": config_json(cfg),
        "engine": engine_name,
        "dtype": T::NAME,
        "steps": tr.step,
        "seconds": secs,
        "steps_per_second": tr.step as f64 / secs.max(1e-9),
        "final_loss": final_loss,
        "risk": risk.map(|r| json!({"L": cfg.task.len, "risk": r.risk, "stderr": r.stderr, "samples": r.n})),
        "heads": rep.heads.iter().map(|h| json!({"omega": h.omega, "mu": h.mu, "kind": h.kind.as_str()})).collect::<Vec<_>>(),
        "sign_matching": rep.sign_matching,
        "eta_eff": rep.eta_eff,
    });
    write_text(&dir.summary(), &json(&summary))?;
    if !a.quiet {
        eprintln!(
            "trained {} steps in {:.2} s ({:.0} steps/s, engine {engine_name}); final loss {final_loss:.4}",
            tr.step,
            secs,
            tr.step as f64 / secs.max(1e-9)
        );
    }
    println!("{}", dir.summary().display());
    Ok(())
}
