//! `icl analyze DIR`: per-head effective circuits, (omega, mu), head kinds and pattern metrics;
//! writes DIR/circuits.svg (heatmaps of each head's KQ and transposed OV rows, He et al. figure 1a).
use super::common::{out, outln};
use crate::error::CliResult;
use icl_run::analyze::analyze_run;
use icl_run::summary::pretty;
use icl_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl analyze`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder.
    pub dir: PathBuf,
    /// Print JSON: {"heads": [{"omega", "mu", "kind", ...}], pattern metrics...}.
    #[arg(long)]
    pub json: bool,
    /// Do not write circuits.svg.
    #[arg(long)]
    pub no_plot: bool,
}

pub fn run(a: &Args) -> CliResult {
    let dir = RunDir::new(&a.dir);
    let rep = analyze_run(&dir, !a.no_plot)?;
    if a.json {
        return outln(&pretty(&rep));
    }
    let mut s = format!("step {}; {} heads\n", rep.step, rep.heads.len());
    s.push_str(&format!(
        "{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "head", "omega", "mu", "kind", "offdiag", "|KQ21|", "|OV21|"
    ));
    for (i, h) in rep.heads.iter().enumerate() {
        s.push_str(&format!(
            "{i:>4} {:>9.4} {:>9.4} {:>9} {:>9.3} {:>9.4} {:>9.4}\n",
            h.omega, h.mu, h.kind, h.offdiag_ratio, h.kq21_norm, h.ov21_norm
        ));
    }
    s.push_str(&format!(
        "sign matching: {}; gamma {:.4}; mu+ {:.4}; mu- {:.4}; sum mu {:.4}; |omega| max/min {:.3}; eta_eff {}\n",
        rep.sign_matching,
        rep.gamma,
        rep.mu_plus,
        rep.mu_minus,
        rep.mu_sum,
        rep.omega_homogeneity,
        rep.eta_eff.map(|x| format!("{x:.4}")).unwrap_or_else(|| "n/a".into())
    ));
    if !a.no_plot {
        s.push_str(&format!("wrote {}\n", dir.circuits_svg().display()));
    }
    out(&s)
}
