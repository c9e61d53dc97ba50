//! `icl analyze DIR`: per-head effective circuits, (omega, mu), head kinds and pattern metrics;
//! writes DIR/circuits.svg (heatmaps of each head's KQ and transposed OV rows, He et al. figure 1a).
use super::common::json;
use crate::error::CliResult;
use crate::plot::{heatmaps_svg, Heatmap};
use icl_core::analysis::{analyze, Report};
use icl_core::ModelSpec;
use icl_io::{AnyModel, RunDir};
use serde_json::json;
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

/// The JSON form of a report.
pub fn report_json(rep: &Report) -> serde_json::Value {
    json!({
        "heads": rep.heads.iter().map(|h| json!({
            "omega": h.omega, "mu": h.mu, "kind": h.kind.as_str(), "mu_all": h.mu_all,
            "omega_diag": h.omega_diag, "offdiag_ratio": h.offdiag_ratio, "kq21_norm": h.kq21_norm,
            "ov21_norm": h.ov21_norm, "sign_match": h.sign_match,
        })).collect::<Vec<_>>(),
        "sign_matching": rep.sign_matching,
        "omega_homogeneity": rep.omega_homogeneity,
        "gamma": rep.gamma,
        "mu_plus": rep.mu_plus,
        "mu_minus": rep.mu_minus,
        "mu_sum": rep.mu_sum,
        "zero_sum_ratio": rep.zero_sum_ratio,
        "eta_eff": rep.eta_eff,
    })
}

/// Heatmaps of every head: KQ (E x E; the query-side y column is masked, it multiplies z_q's 0)
/// and OV's output rows transposed (E x n_out).
pub fn circuit_maps(spec: &ModelSpec, rep: &Report) -> Vec<Heatmap> {
    let (e, d, no) = (spec.e(), spec.d, spec.n_out);
    let mut maps = Vec::new();
    for (h, hr) in rep.heads.iter().enumerate() {
        let kq = (0..e * e)
            .map(|k| if k % e >= d { None } else { Some(hr.kq[k]) })
            .collect();
        maps.push(Heatmap {
            title: format!("head {h} KQ ({})", hr.kind.as_str()),
            rows: e,
            cols: e,
            values: kq,
        });
        let ov = (0..e * no)
            .map(|k| Some(hr.ov[(k % no) * e + k / no]))
            .collect();
        maps.push(Heatmap {
            title: format!("OV^T {h}"),
            rows: e,
            cols: no,
            values: ov,
        });
    }
    maps
}

pub fn run(a: &Args) -> CliResult {
    let dir = RunDir::new(&a.dir);
    let (_, model, step) = dir.load()?;
    let rep = match &model {
        AnyModel::F32(m) => analyze(&m.spec, &m.circuits()),
        AnyModel::F64(m) => analyze(&m.spec, &m.circuits()),
    };
    if !a.no_plot {
        heatmaps_svg(&dir.circuits_svg(), &circuit_maps(model.spec(), &rep))?;
    }
    if a.json {
        let mut v = report_json(&rep);
        v["step"] = json!(step);
        println!("{}", json(&v));
    } else {
        println!("step {step}; {} heads", rep.heads.len());
        println!(
            "{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "head", "omega", "mu", "kind", "offdiag", "|KQ21|", "|OV21|"
        );
        for (i, h) in rep.heads.iter().enumerate() {
            println!(
                "{i:>4} {:>9.4} {:>9.4} {:>9} {:>9.3} {:>9.4} {:>9.4}",
                h.omega,
                h.mu,
                h.kind.as_str(),
                h.offdiag_ratio,
                h.kq21_norm,
                h.ov21_norm
            );
        }
        println!(
            "sign matching: {}; gamma {:.4}; mu+ {:.4}; mu- {:.4}; sum mu {:.4}; |omega| max/min {:.3}; eta_eff {}",
            rep.sign_matching,
            rep.gamma,
            rep.mu_plus,
            rep.mu_minus,
            rep.mu_sum,
            rep.omega_homogeneity,
            rep.eta_eff.map(|x| format!("{x:.4}")).unwrap_or_else(|| "n/a".into())
        );
        if !a.no_plot {
            println!("wrote {}", dir.circuits_svg().display());
        }
    }
    Ok(())
}
