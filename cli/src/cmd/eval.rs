//! `icl eval DIR`: Monte Carlo risk of the trained model and the classical baselines at test
//! lengths L' (length generalisation, He et al. 2025 figure 3).
use super::common::outln;
use crate::error::CliResult;
use icl_core_run::eval::write_risk_plot;
use icl_core_run::options::EvalArgs;
use icl_core_run::summary::pretty;
use icl_core_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder (from `icl train` or `icl import`).
    pub dir: PathBuf,
    /// The options (`icl_core_run::options::EvalArgs`: the C API's keys, Python's keywords).
    #[command(flatten)]
    pub opts: EvalArgs,
    /// Also write the figure of the risks against L' (model and every baseline, error bars of
    /// one standard error) to FILE: PNG if it ends in .png, SVG if in .svg (other names are
    /// refused).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print JSON: {"rows": [{"estimator", "L", "risk", "stderr", "tau", "shift"}], ...} ("tau"
    /// on model rows); transformer runs add "target": "noise-free", "etas", "alignment".
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    // a figure that cannot be written is refused before the Monte Carlo runs
    if let Some(p) = &a.plot {
        icl_core_run::plot::check_figure_path(p)?;
        icl_core_run::folder::check_output(p)?;
    }
    // the options are checked before the run is read
    a.opts.options()?;
    let dir = RunDir::new(&a.dir);
    // a run too wide for the SIMD kernels says so before its (slow) evaluation
    let cfg = icl_core_run::checkpoint::load_config(&dir.config()).ok();
    if let Some(note) =
        cfg.and_then(|c| icl_core_run::engines::simd_fallback_note(&c, a.opts.engine.as_deref()))
    {
        eprintln!("icl: note: {note}");
    }
    let res = a.opts.eval(&dir)?;
    if let Some(p) = &a.plot {
        write_risk_plot(&res, p)?;
    }
    if a.json {
        return outln(&pretty(&res));
    }
    let mut s = String::new();
    if let Some(t) = &res.target {
        s.push_str(&format!(
            "risks against the {t} target (raw MSE, not divided by d)\n"
        ));
    }
    if let Some(sh) = res.rows.first().and_then(|r| r.shift.as_ref()) {
        if !sh.is_empty() {
            let keys: Vec<String> = sh.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("test-time shift: {}\n", keys.join(", ")));
        }
    }
    s.push_str(&format!(
        "{:<14} {:>6} {:>10} {:>10}\n",
        "estimator", "L", "risk", "stderr"
    ));
    for r in &res.rows {
        let mut eta = r.eta.map(|e| format!("  (eta {e})")).unwrap_or_default();
        if let Some(t) = r.tau {
            let how = if r.tau_opt { " opt" } else { "" };
            eta.push_str(&format!("  (tau{how} {t:.4})"));
        }
        s.push_str(&format!(
            "{:<14} {:>6} {:>10.5} {:>10.5}{eta}\n",
            r.estimator, r.len, r.risk, r.stderr
        ));
    }
    for a in &res.alignment {
        s.push_str(&format!(
            "alignment L={}: model sim {:.4}, grad diff {:.4}, |yhat_TF - yhat_Alg| {:.4} ({} sequences)\n",
            a.len, a.model_sim, a.grad_diff, a.pred_diff, a.samples
        ));
    }
    super::common::out(&s)
}
