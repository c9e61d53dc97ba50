//! `icl analyze DIR`: per-head effective circuits, (omega, mu), head kinds and pattern metrics;
//! writes DIR/circuits.svg (heatmaps of each head's KQ and transposed OV rows, He et al. figure 1a).
//! For transformer runs: <u1, omega>, <u2, omega>, eta_x, eta_y and the pattern metrics per
//! parameter set, and heatmaps of every head's Phi and Psi (multilayer paper §4.2, figs. 2, 7).
//! For GPT-2 runs: every layer's and head's attention on one prompt, written to DIR/attention.svg,
//! with the weight x tokens give the label tokens and tokens give themselves.
use super::common::{out, outln};
use crate::error::CliResult;
use icl_core_run::analyze::analyze_run;
use icl_core_run::summary::pretty;
use icl_core_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl analyze`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder.
    pub dir: PathBuf,
    /// Print JSON: {"heads": [{"omega", "mu", "kind", ...}], pattern metrics...}; transformer runs:
    /// {"u1_omega", "u2_omega", "eta_x", "eta_y", "layers": [{...}]}.
    #[arg(long)]
    pub json: bool,
    /// Do not write the figure (circuits.svg; attention.svg for GPT-2 runs).
    #[arg(long)]
    pub no_plot: bool,
}

pub fn run(a: &Args) -> CliResult {
    let dir = RunDir::new(&a.dir);
    let rep = analyze_run(&dir, !a.no_plot)?;
    if a.json {
        return outln(&pretty(&rep));
    }
    let mut s = String::new();
    if let Some(t) = &rep.transformer {
        s.push_str(&format!(
            "step {}; {} ({})\n",
            rep.step,
            t.block,
            if t.looped { "looped" } else { "non-looped" }
        ));
        s.push_str(&format!(
            "{:>6} {:>10} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
            "set", "<u1,w>", "<u2,w>", "eta_x", "eta_y", "offdiagF", "offdiagP", "PhiDD", "diag cv"
        ));
        for (i, l) in t.layers.iter().enumerate() {
            let name = if t.looped {
                "block".to_string()
            } else {
                format!("layer{}", i + 1)
            };
            s.push_str(&format!(
                "{name:>6} {:>10.4} {:>10.4} {:>8.4} {:>8.4} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
                l.u1_omega,
                l.u2_omega,
                l.eta_x,
                l.eta_y,
                l.phi_offdiag,
                l.psi_offdiag,
                l.phi_last,
                l.phi_diag_cv
            ));
            for (h, ((w, u1), u2)) in l.omega.iter().zip(&l.u1).zip(&l.u2).enumerate() {
                s.push_str(&format!(
                    "       head {h}: omega {w:.4}  u1 {u1:.4}  u2 {u2:.4}\n"
                ));
            }
            if let Some(p) = &l.preconditioned {
                for (h, (w, r)) in p.iter().enumerate() {
                    s.push_str(&format!("       head {h}: omega(Phi Sigma) {w:.4}  ||Phi Sigma - omega I||/||omega I|| {r:.3}\n"));
                }
            }
        }
    }
    if let Some(g) = &rep.gpt2 {
        s.push_str(&format!(
            "step {}; GPT-2 attention on one prompt of {} pairs (attention.svg)\n{:>6} {:>5} {:>14} {:>12}\n",
            rep.step, g.prompt_pairs, "layer", "head", "x -> labels", "self"
        ));
        for h in &g.attention_heads {
            s.push_str(&format!(
                "{:>6} {:>5} {:>14.3} {:>12.3}\n",
                h.layer + 1,
                h.head + 1,
                h.y_mass,
                h.self_mass
            ));
        }
    }
    if let Some(rep2) = &rep.attention {
        s.push_str(&format!("step {}; {} heads\n", rep.step, rep2.heads.len()));
        s.push_str(&format!(
            "{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "head", "omega", "mu", "kind", "offdiag", "|KQ21|", "|OV21|"
        ));
        for (i, h) in rep2.heads.iter().enumerate() {
            s.push_str(&format!(
                "{i:>4} {:>9.4} {:>9.4} {:>9} {:>9.3} {:>9.4} {:>9.4}\n",
                h.omega, h.mu, h.kind, h.offdiag_ratio, h.kq21_norm, h.ov21_norm
            ));
        }
        s.push_str(&format!(
            "sign matching: {}; gamma {:.4}; mu+ {:.4}; mu- {:.4}; sum mu {:.4}; |omega| max/min {:.3}; eta_eff {}\n",
            rep2.sign_matching,
            rep2.gamma,
            rep2.mu_plus,
            rep2.mu_minus,
            rep2.mu_sum,
            rep2.omega_homogeneity,
            rep2.eta_eff.map(|x| format!("{x:.4}")).unwrap_or_else(|| "n/a".into())
        ));
    }
    if !a.no_plot {
        let figure = if rep.gpt2.is_some() {
            dir.attention_svg()
        } else {
            dir.circuits_svg()
        };
        s.push_str(&format!("wrote {}\n", figure.display()));
    }
    out(&s)
}
