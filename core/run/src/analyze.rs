//! Analysis of a run: per-head effective circuits, (omega, mu), head kinds and pattern metrics
//! (He et al. 2025 §4), and the heatmaps of `circuits.svg` (figure 1a).
use crate::any::AnyModel;
use crate::dispatch;
use crate::error::Result;
use crate::folder::RunDir;
use crate::plot::{heatmaps_svg, Heatmap};
use crate::summary::Analysis;
use icl_core::analysis::{analyze, Report};
use icl_core::ModelSpec;

/// The core's report of a model.
pub fn report(model: &AnyModel) -> Report {
    dispatch!(model, m => analyze(&m.spec, &m.circuits()))
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

/// Analyse the run in `dir`; with `plot`, write `circuits.svg` into it.
pub fn analyze_run(dir: &RunDir, plot: bool) -> Result<Analysis> {
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    let rep = report(&loaded.model);
    if plot {
        heatmaps_svg(
            &dir.circuits_svg(),
            &circuit_maps(loaded.model.spec(), &rep),
        )?;
    }
    Ok(Analysis::of(&rep, loaded.step))
}
