//! The in-context IV sensitivity study (issue 39): under which data law does Fig. 5a's ordering
//! hold? Fig. 5a puts the 2-stage transformer below OLS and the one-stage TF Ref (and near 2SLS
//! as L grows). Under the spec's law (Liang et al.'s, `task.iv_*` at their defaults) not even the
//! interpreted algorithm's ceiling gets below OLS (`docs/papers/multilayer.md`), so the study
//! varies the law and measures, without training, what a trained model is bounded by:
//!
//! * the endogeneity scale c = 1, 2, 3 (`task.iv_endogeneity`: u ~ N(0, c² I), so its effect on
//!   x and on y scales by c), θ gaussian (Liang's) or orthogonal (θᵀθ = qI, `task.iv_theta`), and
//!   the context length L = 200, 800; q = 6, p = 4 and the paper's noise-free query;
//! * on the same sequences (evaluation streams, seed 0, shared across the cells of one L), the
//!   rows of `icl eval` on an IV run ([`icl_core::families::iv::eval::baselines`]): OLS at x_q,
//!   2SLS at θ̂ᵀz_q, 2SLS at x_q (`2sls_xq`, Liang's), and Algorithm 1 (steps tuned in-sample)
//!   with 3 steps on the ideal stage-1 fit (`alg1_ideal_2stage`, the two-stage model's ceiling)
//!   and with 4 steps on (x, y) (`alg1_1stage`, TF Ref's);
//! * "the ordering holds" in a cell when the ideal two-stage pipeline is below both OLS and the
//!   one-stage ceiling by at least 2 standard errors of the paired difference.
//!
//! Files: `iv-sensitivity.csv` (one row per cell: every risk with its standard error, the
//! paired differences, the verdict), `iv-sensitivity.svg` (risk against c, one panel per θ and
//! L) and `answer.md` (the answer in words).
use super::claim::{claim, mean_se, ClaimDef, Reading};
use super::experiment::{get, write_csv_text, ExperimentSummary, Experiments, Row};
use super::Scale;
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use crate::folder::atomic_write;
use crate::plot::figures::estimator_name;
use crate::plot::{Axis, Figure, Panel, Series};
use icl_core::config::{IvQuery, IvTheta};
use icl_core::data::iv::{Iv, IvLaw};
use icl_core::families::iv::eval::{baselines, sequences};
use icl_core::families::stack::StackRunner;
use std::collections::BTreeMap;
use std::path::Path;

/// The experiment's name (its folder under `runs/`).
pub const NAME: &str = "multilayer-iv-sensitivity";

/// The multilayer paper's computed experiments (its row of [`super::PAPERS`]).
pub const EXPERIMENTS: Experiments = Experiments {
    names: &[NAME],
    compute: run,
};

/// The endogeneity scales c.
pub const ENDOGENEITY: [f64; 3] = [1.0, 2.0, 3.0];
/// The laws of θ.
pub const THETAS: [IvTheta; 2] = [IvTheta::Gaussian, IvTheta::Orthogonal];
/// The context lengths.
pub const LENGTHS: [usize; 2] = [200, 800];
/// The estimators, in the figure's order (row names of `icl eval` on an IV run).
pub const ESTIMATORS: [&str; 5] = ["ols", "2sls", "2sls_xq", "alg1_ideal_2stage", "alg1_1stage"];
/// Instruments q and regressors p (the paper's).
const Q: usize = 6;
const P: usize = 4;
/// Algorithm 1's steps: stage 2's depth (the two-stage ceiling) and TF Ref's (one stage).
const T2: usize = 3;
const T_REF: usize = 4;
/// Standard errors of the paired difference by which the ideal pipeline must be below.
const SES: f64 = 2.0;

/// Sequences per cell.
fn samples(scale: Scale) -> usize {
    match scale {
        Scale::Smoke => 400,
        Scale::Paper => 10_000,
    }
}

/// Mean and standard error of the paired difference a − b.
fn diff(a: &[f64], b: &[f64]) -> (f64, f64) {
    mean_se(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>())
}

/// One cell: (c, θ, L).
struct Cell {
    c: f64,
    theta: IvTheta,
    len: usize,
    row: Row,
}

/// Compute the study into `dir`.
pub fn run(name: &str, scale: Scale, dir: &Path) -> Result<ExperimentSummary> {
    if name != NAME {
        return Err(RunError::UnknownName(format!(
            "experiment {name:?} (the multilayer paper computes {NAME})"
        )));
    }
    let t0 = std::time::Instant::now();
    let n = samples(scale);
    let engine = Engines::named(None).0;
    let mut runner = StackRunner::new(<f64 as RunScalar>::stack_engine(&engine)?);
    let mut cells = Vec::new();
    for &len in &LENGTHS {
        for &theta in &THETAS {
            for &c in &ENDOGENEITY {
                let iv = Iv {
                    law: IvLaw {
                        endogeneity: c,
                        theta,
                        query: IvQuery::Paper,
                    },
                    ..Iv::new(Q, P)
                };
                let seqs = sequences(&iv, len, n, 0);
                let rows = baselines(&iv, &seqs, len, T2, T_REF, &mut runner)?;
                let errs = |k: &str| -> Result<&[f64]> {
                    rows.iter()
                        .find(|b| b.name == k)
                        .map(|b| b.errors.as_slice())
                        .ok_or_else(|| RunError::Refused(format!("no {k} row at L = {len}")))
                };
                let mut row = Row::new();
                let mut put = |k: &str, v: f64| {
                    row.insert(k.to_string(), Some(v));
                };
                put("endogeneity", c);
                put("L", len as f64);
                put(
                    "orthogonal",
                    f64::from(u8::from(theta == IvTheta::Orthogonal)),
                );
                for e in ESTIMATORS {
                    let (m, se) = mean_se(errs(e)?);
                    put(e, m);
                    put(&format!("{e}_se"), se);
                }
                let ideal = errs("alg1_ideal_2stage")?;
                let pairs = [
                    ("ideal_minus_ols", diff(ideal, errs("ols")?)),
                    ("ideal_minus_1stage", diff(ideal, errs("alg1_1stage")?)),
                    ("ideal_minus_2sls", diff(ideal, errs("2sls")?)),
                    ("2sls_minus_ols", diff(errs("2sls")?, errs("ols")?)),
                ];
                for (k, (m, se)) in pairs {
                    put(k, m);
                    put(&format!("{k}_se"), se);
                }
                let below = |(m, se): (f64, f64)| m < -SES * se;
                put(
                    "holds",
                    f64::from(u8::from(below(pairs[0].1) && below(pairs[1].1))),
                );
                if let Some((ex, ey)) = rows
                    .iter()
                    .find(|b| b.name == "alg1_ideal_2stage")
                    .and_then(|b| b.etas)
                {
                    put("ideal_eta_x", ex);
                    put("ideal_eta_y", ey);
                }
                cells.push(Cell { c, theta, len, row });
            }
        }
    }
    write_files(dir, &cells)?;
    let answer = answer(&cells.iter().map(|c| c.row.clone()).collect::<Vec<_>>());
    atomic_write(&dir.join("answer.md"), format!("{answer}\n").as_bytes())?;
    let setting: BTreeMap<String, String> = [
        ("q", Q.to_string()),
        ("p", P.to_string()),
        ("endogeneity", "1, 2, 3".into()),
        ("theta", "gaussian, orthogonal".into()),
        ("L", "200, 800".into()),
        ("query", "paper (noise-free x_q, y_q)".into()),
        ("sequences per cell", n.to_string()),
        (
            "streams",
            "evaluation, seed 0 (the same draws in every cell of one L)".into(),
        ),
        (
            "alg1 steps",
            format!("{T2} (ideal two-stage), {T_REF} (one stage), tuned in-sample"),
        ),
        (
            "holds",
            format!("alg1_ideal_2stage below OLS and below alg1_1stage by ≥ {SES} paired SE"),
        ),
        ("answer", answer),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Ok(ExperimentSummary {
        experiment: NAME.into(),
        figure: "Fig. 5a".into(),
        scale: scale.name().into(),
        description: "In-context IV sensitivity (issue 39): risk at the noise-free query of OLS, 2SLS (at θ̂ᵀz_q and at x_q) and the interpreted algorithm's ceilings (Algorithm 1 on the ideal stage-1 fit, and on (x, y)) over the endogeneity scale, θ's law and L; no training".into(),
        setting,
        tables: [("iv-sensitivity".to_string(), cells.into_iter().map(|c| c.row).collect())]
            .into_iter()
            .collect(),
        prompts: (n * LENGTHS.len() * THETAS.len() * ENDOGENEITY.len()) as u64,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The CSV (θ written as its key's value) and the figure.
fn write_files(dir: &Path, cells: &[Cell]) -> Result<()> {
    let mut cols: Vec<String> = vec!["endogeneity".into(), "theta".into(), "L".into()];
    for e in ESTIMATORS {
        cols.push(e.into());
        cols.push(format!("{e}_se"));
    }
    for k in [
        "ideal_minus_ols",
        "ideal_minus_1stage",
        "ideal_minus_2sls",
        "2sls_minus_ols",
    ] {
        cols.push(k.into());
        cols.push(format!("{k}_se"));
    }
    cols.extend(["holds", "ideal_eta_x", "ideal_eta_y"].map(String::from));
    let text: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            cols.iter()
                .map(|k| match k.as_str() {
                    "theta" => c.theta.as_str().to_string(),
                    k => format!("{}", get(&c.row, k)),
                })
                .collect()
        })
        .collect();
    let header: Vec<&str> = cols.iter().map(String::as_str).collect();
    write_csv_text(&dir.join("iv-sensitivity.csv"), &header, text)?;
    let mut panels = Vec::new();
    for &len in &LENGTHS {
        for &theta in &THETAS {
            let at: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.len == len && c.theta == theta)
                .collect();
            let series = ESTIMATORS
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    let pts = at.iter().map(|c| (c.c, get(&c.row, e))).collect();
                    let se = at.iter().map(|c| get(&c.row, &format!("{e}_se"))).collect();
                    Series::line(estimator_name(e), pts)
                        .with_errors(se)
                        .styled(k)
                        .with_color(k)
                })
                .collect();
            panels.push(Panel {
                title: format!("θ {}, L = {len} (q = {Q}, p = {P}; ±1 SE)", theta.as_str()),
                x: Axis::linear("endogeneity scale c").with_ticks(ENDOGENEITY.to_vec()),
                y: Axis::log("risk at the query"),
                series,
            });
        }
    }
    Figure::stacked(panels).write(&dir.join("iv-sensitivity.svg"))
}

/// The answer to "under which setting does Fig. 5a's ordering hold", from the cells' rows.
pub fn answer(rows: &[Row]) -> String {
    let name = |r: &Row| {
        format!(
            "c = {}, θ {}, L = {}",
            get(r, "endogeneity"),
            if get(r, "orthogonal") == 1.0 {
                "orthogonal"
            } else {
                "gaussian"
            },
            get(r, "L")
        )
    };
    let holds: Vec<String> = rows
        .iter()
        .filter(|r| get(r, "holds") == 1.0)
        .map(name)
        .collect();
    let tsls: usize = rows
        .iter()
        .filter(|r| get(r, "2sls_minus_ols") < -SES * get(r, "2sls_minus_ols_se"))
        .count();
    let at_default = rows.iter().find(|r| {
        get(r, "endogeneity") == 1.0 && get(r, "orthogonal") == 0.0 && get(r, "L") == 200.0
    });
    let default = at_default.map_or(String::new(), |r| {
        format!(
            " At the spec's law (c = 1, θ gaussian, L = 200) the ideal two-stage pipeline's risk is {:.3} ± {:.3} against OLS {:.3} ± {:.3}, 2SLS {:.3} and the one-stage ceiling {:.3}.",
            get(r, "alg1_ideal_2stage"),
            get(r, "alg1_ideal_2stage_se"),
            get(r, "ols"),
            get(r, "ols_se"),
            get(r, "2sls"),
            get(r, "alg1_1stage")
        )
    });
    let head = if holds.is_empty() {
        "Fig. 5a's ordering (the ideal two-stage pipeline below OLS and below the one-stage ceiling, by ≥ 2 paired SE) holds in none of the cells.".to_string()
    } else {
        format!(
            "Fig. 5a's ordering (the ideal two-stage pipeline below OLS and below the one-stage ceiling, by ≥ 2 paired SE) holds in {} of {} cells: {}.",
            holds.len(),
            rows.len(),
            holds.join("; ")
        )
    };
    format!(
        "{head}{default} 2SLS is below OLS by ≥ 2 paired SE in {tsls} of {} cells.",
        rows.len()
    )
}

/// The study as a claim of the multilayer report: its verdict is the statement an independent
/// argument predicts (2SLS is consistent, OLS keeps a bias that grows with c, so at c = 3 and
/// L = 800 2SLS is below OLS by at least 3 paired SE for both θ); the note answers the question.
pub(super) fn claim_def() -> ClaimDef {
    claim(
        "iv-sensitivity",
        "Fig. 5a, issue 39",
        "In-context IV sensitivity (no number in the paper): where does Fig. 5a's ordering hold? Over the endogeneity scale c = 1, 2, 3, θ gaussian or orthogonal (θᵀθ = qI) and L = 200, 800, the interpreted algorithm's two-stage ceiling against OLS and the one-stage ceiling, with 2SLS and 2SLS at x_q beside them; measured: the cells where the ordering holds (the note names them); verdict: 2SLS below OLS by ≥ 3 paired SE at c = 3, L = 800, both θ",
    )
    .runs([NAME])
    .stated("2SLS < OLS by ≥ 3 paired SE at c = 3, L = 800, both θ")
    .source("issue 39; 2SLS is consistent, OLS keeps the bias c² Σ_x⁻¹ Φᵀφ (no number in the paper)")
    .measure(|r| {
        let s = r.experiment(NAME)?;
        let rows = s.table("iv-sensitivity")?;
        let at3: Vec<&Row> = rows
            .iter()
            .filter(|r| get(r, "endogeneity") == 3.0 && get(r, "L") == 800.0)
            .collect();
        let ok = !at3.is_empty()
            && at3
                .iter()
                .all(|r| get(r, "2sls_minus_ols") < -3.0 * get(r, "2sls_minus_ols_se"));
        let holds = rows.iter().filter(|r| get(r, "holds") == 1.0).count();
        Ok(Reading::new(holds as f64).and(ok).note(answer(rows)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The study at smoke scale writes its CSV, figure and answer, with finite positive risks
    /// and standard errors in every cell. Independent of the code under test: 2SLS is consistent
    /// for β (its bias and variance fall like 1/L) while OLS converges to β + c² Σ_x⁻¹ Φᵀφ, an
    /// O(1) bias at c = 3 (Σ_x = θᵀθ + c² ΦᵀΦ + I), so at L = 800 2SLS is below OLS by several
    /// standard errors (at L = 200 its heavy tails under a gaussian θ leave only ~2 SE at 400
    /// sequences); and OLS's risk grows with c in every (θ, L).
    #[test]
    fn the_iv_study_writes_sane_files() {
        let dir = std::env::temp_dir().join(format!("icl-iv-study-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let s = run(NAME, Scale::Smoke, &dir).unwrap();
        let csv = std::fs::read_to_string(dir.join("iv-sensitivity.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 12, "{csv}");
        assert!(csv.starts_with("endogeneity,theta,L,ols,ols_se,2sls,"));
        let svg = std::fs::read_to_string(dir.join("iv-sensitivity.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("2SLS at x_q"));
        let answer = std::fs::read_to_string(dir.join("answer.md")).unwrap();
        eprintln!("{csv}\n{answer}({:.1} s)", s.seconds);
        assert!(answer.contains("Fig. 5a's ordering"), "{answer}");
        let rows = s.table("iv-sensitivity").unwrap();
        assert_eq!(rows.len(), 12);
        for r in rows {
            for e in ESTIMATORS {
                let (m, se) = (get(r, e), get(r, &format!("{e}_se")));
                assert!(
                    m.is_finite() && m > 0.0 && se.is_finite() && se > 0.0 && se < m,
                    "{e}: {m} ± {se}"
                );
            }
            if get(r, "endogeneity") == 3.0 && get(r, "L") == 800.0 {
                let (d, se) = (get(r, "2sls_minus_ols"), get(r, "2sls_minus_ols_se"));
                assert!(d < -3.0 * se, "c = 3, L = 800: 2SLS − OLS = {d} ± {se}");
            }
        }
        for &len in &LENGTHS {
            for o in [0.0, 1.0] {
                let ols: Vec<f64> = ENDOGENEITY
                    .iter()
                    .map(|&c| {
                        let r = rows.iter().find(|r| {
                            get(r, "endogeneity") == c
                                && get(r, "orthogonal") == o
                                && get(r, "L") == len as f64
                        });
                        get(r.unwrap(), "ols")
                    })
                    .collect();
                assert!(
                    ols.windows(2).all(|w| w[1] > w[0]),
                    "OLS against c: {ols:?}"
                );
            }
        }
        assert_eq!(
            s.setting.get("answer").map(String::as_str),
            Some(answer.trim_end())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
