//! Linear attention on Zhang et al. (2025)'s `eigs` task: plateaus against the theory levels, the
//! group CSVs (`loss.csv`, `values.csv`, `alignment.csv`, `m.csv`) and figures.
use crate::csv_text::{csv_text, group_csv, metrics_row};
use crate::error::Result;
use crate::folder::RunDir;
use crate::plot::{lines_figure, Series};
use crate::summary::{LinattnSummary, PlateauSummary};
use icl_core::config::LinNorm;
use icl_core::families::linear_attention::metrics::{
    detect_plateaus, nearest_level, rel_dist, PlateauOptions,
};
use icl_core::families::linear_attention::LinattnTheory;
use icl_core::theory::zhang2025::{crossings, v_star};
use icl_core::train::Trainer;
use icl_core::Scalar;

/// The Zhang et al. (2025) outputs: plateaus against the theory levels, group CSVs and plots.
pub fn write<T: Scalar>(
    t: &Trainer<T>,
    dir: &RunDir,
    curve: &[(f64, f64)],
) -> Result<LinattnSummary> {
    let cfg = &t.cfg;
    let th = LinattnTheory::of(cfg, &t.task);
    let levels = th.levels.clone();
    let plateaus = detect_plateaus(curve, &PlateauOptions::default());
    let vstar = v_star(&th.spectrum.lambda, th.inv_n).unwrap_or_default();
    let pl: Vec<PlateauSummary> = plateaus
        .iter()
        .map(|p| {
            let (m, theory) = nearest_level(&levels, p.loss);
            let mm = th.spectrum.pcr_matrix(m, th.inv_n);
            PlateauSummary {
                loss: p.loss,
                theory,
                m,
                start_step: p.start_step,
                end_step: p.end_step,
                at_step: p.mid_step,
                pcr_distance: rel_dist(&t.group(&t.log[p.mid_index], "m"), &mm),
            }
        })
        .collect();
    let last = t.log.last();
    let tests: Vec<String> = t
        .columns()
        .iter()
        .filter(|c| c.group == "test")
        .map(|c| c.name.clone())
        .collect();
    let twin = t.column("cubic_mlp");
    let twin_diff = twin.as_ref().map(|tw| {
        tw.iter()
            .zip(&t.log)
            .map(|(l, r)| (l - r.loss).abs())
            .fold(0.0f64, f64::max)
    });
    // loss.csv: step, loss, test losses, the twin, the theory levels
    let mut header: Vec<String> = vec!["step".into(), "loss".into()];
    header.extend(tests.iter().cloned());
    if twin.is_some() {
        header.push("cubic_mlp".into());
    }
    header.extend((0..levels.len()).map(|m| format!("theory_L{m}")));
    let rows = t.log.iter().map(|r| {
        let mut vals = t.group(r, "test");
        vals.extend(t.group(r, "cubic_mlp"));
        vals.extend(&levels);
        metrics_row(r.step, r.loss, &vals, false)
    });
    dir.write_text("loss.csv", &csv_text(&header, rows)?)?;
    dir.write_text("values.csv", &group_csv(t, "values")?)?;
    dir.write_text("alignment.csv", &group_csv(t, "align")?)?;
    dir.write_text("m.csv", &group_csv(t, "m")?)?;

    let x_end = curve.last().map(|p| p.0).unwrap_or(1.0).max(1.0);
    let mut series = vec![Series::line("train loss", curve.to_vec())];
    for n in &tests {
        let pts = t.column(n).unwrap_or_default();
        series.push(Series::line(
            n.replace('_', " "),
            t.log
                .iter()
                .zip(pts)
                .map(|(r, l)| (r.step as f64, l))
                .collect(),
        ));
    }
    if let Some(tw) = &twin {
        // dashed: it lies on the loss (the twin of eqs. 6-7), and a solid line would hide it
        series.push(Series::dashed(
            "cubic-feature MLP (twin, dashed)",
            t.log
                .iter()
                .zip(tw)
                .map(|(r, l)| (r.step as f64, *l))
                .collect(),
        ));
    }
    for (m, l) in levels.iter().enumerate() {
        series.push(Series::level(format!("L(M_{m}) = {l:.4}"), *l, 0.0, x_end));
    }
    if curve.len() >= 2 {
        lines_figure("loss and theory plateaus", "step", "loss", &series, false)
            .for_run(&super::run_name(dir))
            .write(&dir.file("loss.svg"))?;
        let mut vs: Vec<Series> = (0..t.model.attention()?.heads)
            .map(|h| {
                Series::line(
                    format!("v_{}", h + 1),
                    t.log
                        .iter()
                        .map(|r| (r.step as f64, t.group(r, "values")[h]))
                        .collect(),
                )
            })
            .collect();
        if cfg.model.lin_norm == LinNorm::Len {
            for (d, v) in vstar.iter().enumerate() {
                vs.push(Series::level(
                    format!("v*_{} = {v:.3}", d + 1),
                    *v,
                    0.0,
                    x_end,
                ));
            }
        }
        lines_figure("value weights v_h(t)", "step", "v", &vs, false)
            .for_run(&super::run_name(dir))
            .write(&dir.file("values.svg"))?;
    }
    let final_values = last.map(|r| t.group(r, "values"));
    Ok(LinattnSummary {
        theory_levels: levels.clone(),
        inv_n: th.inv_n,
        eigenvalues: th.spectrum.lambda.clone(),
        drops: pl.len().saturating_sub(1),
        plateaus: pl,
        crossings: crossings(&levels, curve),
        grown_values: final_values.as_ref().map(|v| {
            let vmax = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            v.iter().filter(|x| x.abs() > 0.25 * vmax).count()
        }),
        final_values,
        v_star: vstar,
        final_pcr_distance: last.map(|r| {
            rel_dist(
                &t.group(r, "m"),
                &th.spectrum.pcr_matrix(levels.len() - 1, th.inv_n),
            )
        }),
        conservation_drift: last.and_then(|r| t.group(r, "drift").first().copied()),
        tests: tests
            .iter()
            .map(|n| {
                let v = last
                    .and_then(|r| {
                        t.columns()
                            .iter()
                            .position(|c| &c.name == n)
                            .map(|k| r.values[k])
                    })
                    .map(serde_json::Value::from)
                    .unwrap_or(serde_json::Value::Null);
                (n.clone(), v)
            })
            .collect(),
        cubic_mlp_max_abs_diff: twin_diff,
    })
}
