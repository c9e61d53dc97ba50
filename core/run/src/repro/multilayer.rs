//! The multilayer paper (looped transformers on varying-covariance regression, Algorithm 1,
//! in-context IV regression): the runs and the claims.
//!
//! Smoke scale checks the claims that need no training, by Monte Carlo through the theory
//! registry (4000 sequences, noise-free target, raw errors): Algorithm 1 with the paper's
//! Table-1 step sizes (its error is minimal at s = T steps: Obs. 4, Fig. 4b), the baselines,
//! the 3-step GD step size (Fig. 23), the out-of-distribution ordering (Fig. 24) and the IV
//! baselines (Fig. 5a). Paper scale adds the trained models of §7 (looped softmax T = 1..4 and
//! linear T = 2..4, H = 2 / 1, d = 5, L = 120, batch 256, the presets' step counts; the IV
//! two-block model and TF Ref) and the claims measured on them (depth, Table 1, stacking, TF ≈
//! Algorithm 1, OOD, IV). Errors are measured against the noise-free target, not divided by d.
use super::{fmt_list, in_range, within, ClaimDef, Measured, RunSpec, Runs, Scale};
use crate::error::{Result, RunError};
use crate::eval::{eval_run, EvalOptions, MlEvalOptions};
use crate::folder::RunDir;
use crate::summary::EvalRows;

/// The paper's Table 1, looped softmax (H = 2) and looped linear (H = 1): (T, <u1, ω>, <u2, ω>).
const TABLE1_SOFTMAX: [(usize, f64, f64); 3] = [
    (2, -0.6675, 0.8591),
    (3, -0.6128, 0.7193),
    (4, -0.6590, 0.6563),
];
const TABLE1_LINEAR: [(usize, f64, f64); 3] = [
    (2, -0.6616, 0.8479),
    (3, -0.6122, 0.7214),
    (4, -0.6466, 0.6217),
];
/// The spec's Monte Carlo of Algorithm 1 at s = T with the Table-1 softmax parameters (§8).
const ALG1_AT_T: [f64; 3] = [0.095, 0.033, 0.012];

/// A list-valued theory-registry quantity (e.g. an error per step).
fn theory_list(name: &str, args: &[(&str, String)]) -> Result<Vec<f64>> {
    let a: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let (out, _) = icl_core::theory::registry::evaluate(name, &a)?;
    out.value
        .as_f64s()
        .ok_or_else(|| RunError::Refused(format!("theory {name} returned no list")))
}

/// Algorithm 1's error after s = 1..steps steps (4000 sequences, L = 120, λ ~ U(lo, hi)).
fn alg1(ex: f64, ey: f64, steps: usize, lo: f64, hi: f64) -> Result<Vec<f64>> {
    theory_list(
        "alg1-risk",
        &[
            ("eta-x", ex.to_string()),
            ("eta-y", ey.to_string()),
            ("steps", steps.to_string()),
            ("lmin", lo.to_string()),
            ("lmax", hi.to_string()),
        ],
    )
}

fn argmin(v: &[f64]) -> usize {
    (0..v.len())
        .min_by(|&a, &b| v[a].total_cmp(&v[b]))
        .unwrap_or(0)
}

/// The multilayer runs and claims at a scale.
pub(super) fn plan(scale: Scale) -> (Vec<RunSpec>, Vec<ClaimDef>) {
    let mut specs = Vec::new();
    let mut defs = theory_claims();
    if scale == Scale::Paper {
        trained(&mut specs, &mut defs);
    }
    (specs, defs)
}

fn theory_claims() -> Vec<ClaimDef> {
    let mut defs = Vec::new();
    for (k, (t, u1, u2)) in TABLE1_SOFTMAX.into_iter().enumerate() {
        let target = ALG1_AT_T[k];
        defs.push(ClaimDef {
            id: ["alg1-depth-t2", "alg1-depth-t3", "alg1-depth-t4"][k],
            figure: "Obs. 4, Fig. 4b, Table 1",
            description: [
                "Algorithm 1 with the trained 2-layer step sizes (Table 1) is best after exactly 2 steps and diverges after (err(4) > 5 err(2)); measured: err(2), the spec's Monte Carlo 0.095 ± 25 %",
                "Algorithm 1 with the trained 3-layer step sizes (Table 1) is best after exactly 3 steps and diverges after (err(6) > 5 err(3)); measured: err(3), the spec's Monte Carlo 0.033 ± 25 %",
                "Algorithm 1 with the trained 4-layer step sizes (Table 1) is best after exactly 4 steps and diverges after (err(8) > 5 err(4)); measured: err(4), the spec's Monte Carlo 0.012 ± 25 %",
            ][k],
            runs: vec![],
            measure: Box::new(move |_| {
                let e = alg1(-u1, u2, 2 * t, 0.8, 1.2)?;
                let best = argmin(&e) + 1;
                let (at, twice) = (e[t - 1], e[2 * t - 1]);
                let mut c = in_range(target, at, None, target * 0.75, target * 1.25, "");
                c.pass &= best == t && twice > 5.0 * at;
                c.note = format!(
                    "errors after s = 1..{}: {} (argmin s = {best}; err(2T)/err(T) = {:.1})",
                    2 * t,
                    fmt_list(&e),
                    twice / at
                );
                Ok(c)
            }),
        });
    }
    defs.push(ClaimDef {
        id: "ridge-l120",
        figure: "Fig. 1a, 3a",
        description: "The ridge (λ = 0.1) baseline at L = 120 (the spec's Monte Carlo 0.0042 ± 15 %; OLS beside it)",
        runs: vec![],
        measure: Box::new(|_| {
            let v = theory_list("regression-baselines", &[])?;
            let (ols, ridge) = (v[0], v[1]);
            let mut c = in_range(0.0042, ridge, None, 0.0042 * 0.85, 0.0042 * 1.15, "");
            c.note = format!("OLS {ols:.5}");
            Ok(c)
        }),
    });
    defs.push(ClaimDef {
        id: "gd3-eta",
        figure: "Fig. 23",
        description: "The best step size of 3-step GD on a grid is η* = 1.1 (the spec's Monte Carlo finds 0.9; accepted: [0.8, 1.2]); measured: the grid argmin over 0.5, 0.55, …, 1.5",
        runs: vec![],
        measure: Box::new(|_| {
            let grid: Vec<f64> = (0..=20).map(|i| 0.5 + 0.05 * i as f64).collect();
            let errs: Vec<f64> = grid
                .iter()
                .map(|&eta| {
                    theory_list("gd-steps-risk", &[("eta", eta.to_string()), ("steps", "3".into())])
                        .map(|v| v[2])
                })
                .collect::<Result<_>>()?;
            let k = argmin(&errs);
            let mut c = in_range(1.1, grid[k], None, 0.8, 1.2, "");
            c.note = format!(
                "3-step GD error {:.4} at η = {:.2}; at η = 1.1: {:.4} (the paper's η* is not the minimiser under this data law)",
                errs[k], grid[k], errs[12]
            );
            Ok(c)
        }),
    });
    defs.push(ClaimDef {
        id: "alg1-ood",
        figure: "Fig. 24, C.7",
        description: "Out of distribution (Algorithm 1, Table-1 3-layer steps): the error grows with the eigenvalue shift, U(0.8,1.2) < U(0.9,1.3) < U(1.1,1.5) < U(1.3,1.7), and fails at U(3,4) (≥ 1.0 and ≥ 10× in distribution); measured: the U(3,4) error",
        runs: vec![],
        measure: Box::new(|_| {
            let (u1, u2) = (TABLE1_SOFTMAX[1].1, TABLE1_SOFTMAX[1].2);
            let e: Vec<f64> = [(0.8, 1.2), (0.9, 1.3), (1.1, 1.5), (1.3, 1.7), (3.0, 4.0)]
                .iter()
                .map(|&(lo, hi)| alg1(-u1, u2, 3, lo, hi).map(|v| v[2]))
                .collect::<Result<_>>()?;
            let ordered = e.windows(2).all(|w| w[1] > w[0]);
            let fails = e[4] >= 1.0 && e[4] >= 10.0 * e[0];
            Ok(Measured {
                paper_value: f64::NAN,
                measured: e[4],
                stderr: None,
                exact: None,
                paper_form: None,
                tolerance: "ordered, and ≥ max(1.0, 10 × in distribution) at U(3,4)".into(),
                pass: ordered && fails,
                note: format!("errors {}", fmt_list(&e)),
            })
        }),
    });
    defs.push(ClaimDef {
        id: "iv-2sls-vs-ols",
        figure: "Fig. 5a",
        description: "In-context IV (q = 6, p = 4, L = 200): 2SLS is below OLS, the endogeneity bias OLS cannot remove; measured: 2SLS error (noise-free y_q)",
        runs: vec![],
        measure: Box::new(|_| {
            let v = theory_list("iv-risk", &[])?;
            let (tsls, ols) = (v[0], v[1]);
            Ok(Measured {
                paper_value: f64::NAN,
                measured: tsls,
                stderr: None,
                exact: None,
                paper_form: None,
                tolerance: format!("< OLS {ols:.4}"),
                pass: tsls < ols,
                note: format!("OLS {ols:.4}"),
            })
        }),
    });
    defs
}

/// The paper-scale trained runs and their claims.
fn trained(specs: &mut Vec<RunSpec>, defs: &mut Vec<ClaimDef>) {
    for t in 1..=4 {
        specs.push(super::spec(
            format!("softmax-t{t}"),
            &format!("multilayer-t{t}"),
            &[],
        ));
    }
    for t in 2..=4 {
        specs.push(super::spec(
            format!("linear-t{t}"),
            &format!("multilayer-linear-t{t}"),
            &[],
        ));
    }
    specs.push(super::spec("iv-2stage", "iv-2stage", &[]));
    specs.push(super::spec("iv-tf-ref", "iv-tf-ref", &[]));
    let soft: Vec<String> = (1..=4).map(|t| format!("softmax-t{t}")).collect();

    defs.push(ClaimDef {
        id: "depth",
        figure: "Fig. 1a, Obs. 1",
        description: "Depth helps and saturates: err(T=1) ≥ 0.2, err(2) < err(1)/2, err(3) ≤ err(2), |err(4) − err(3)| ≤ 0.03 (raw; the paper's < 0.01 fits /d), ridge < err(4) at L = 120; measured: |err(4) − err(3)|",
        runs: soft.clone(),
        measure: Box::new(|r| {
            let rows: Vec<EvalRows> = (1..=4)
                .map(|t| ml_eval(r, &format!("softmax-t{t}"), MlEvalOptions::default()))
                .collect::<Result<_>>()?;
            let e: Vec<f64> = rows.iter().map(|x| risk(x, "model", 120)).collect();
            let ridge = risk(&rows[3], "ridge", 120);
            let gap = (e[3] - e[2]).abs();
            let ok = e[0] >= 0.2 && e[1] < e[0] / 2.0 && e[2] <= e[1] && ridge < e[3];
            let mut c = within(0.01, gap, None, 0.0, 0.03, "");
            c.pass &= ok;
            c.note = format!("err(T = 1..4) {}; ridge {ridge:.5}", fmt_list(&e));
            Ok(c)
        }),
    });
    for (rows, kind, tol) in [
        (TABLE1_SOFTMAX, "softmax", 0.12),
        (TABLE1_LINEAR, "linear", 0.1),
    ] {
        for (t, u1, u2) in rows {
            let name = format!("{kind}-t{t}");
            let ids = match (kind, t) {
                ("softmax", 2) => ["table1-softmax-t2-u1", "table1-softmax-t2-u2"],
                ("softmax", 3) => ["table1-softmax-t3-u1", "table1-softmax-t3-u2"],
                ("softmax", _) => ["table1-softmax-t4-u1", "table1-softmax-t4-u2"],
                (_, 2) => ["table1-linear-t2-u1", "table1-linear-t2-u2"],
                (_, 3) => ["table1-linear-t3-u1", "table1-linear-t3-u2"],
                _ => ["table1-linear-t4-u1", "table1-linear-t4-u2"],
            };
            for (j, paper) in [u1, u2].into_iter().enumerate() {
                let n = name.clone();
                defs.push(ClaimDef {
                    id: ids[j],
                    figure: "Table 1",
                    description: if j == 0 {
                        "Table 1: the covariate step ⟨u₁, ω⟩ of the trained looped block (negative)"
                    } else {
                        "Table 1: the label step ⟨u₂, ω⟩ of the trained looped block (positive)"
                    },
                    runs: vec![n.clone()],
                    measure: Box::new(move |r| {
                        let s = r.summary(&n)?;
                        let ta = s.transformer.as_ref().ok_or_else(|| {
                            RunError::Refused(format!("{n} is not a transformer run"))
                        })?;
                        let m = if j == 0 { ta.u1_omega } else { ta.u2_omega }.unwrap_or(f64::NAN);
                        Ok(within(paper, m, None, paper, tol, ""))
                    }),
                });
            }
        }
    }
    defs.push(ClaimDef {
        id: "stacking",
        figure: "Fig. 4b, Obs. 4",
        description: "Applying the trained 3-layer looped block twice (6 layers) raises the error at least 5×, and 3× or 4× raises it further; measured: err(2×)/err(1×)",
        runs: vec!["softmax-t3".into()],
        measure: Box::new(|r| {
            let e: Vec<f64> = (1..=4)
                .map(|k| {
                    let ml = MlEvalOptions {
                        stack: Some(k),
                        ..Default::default()
                    };
                    Ok(risk(&ml_eval(r, "softmax-t3", ml)?, "model", 120))
                })
                .collect::<Result<_>>()?;
            let ratio = e[1] / e[0];
            let mut c = in_range(f64::NAN, ratio, None, 5.0, f64::INFINITY, "");
            c.tolerance = "≥ 5, and err(3×), err(4×) ≥ err(2×)".into();
            c.pass &= e[2] >= e[1] && e[3] >= e[1];
            c.note = format!("errors for the block applied 1..4 times: {}", fmt_list(&e));
            Ok(c)
        }),
    });
    defs.push(ClaimDef {
        id: "tf-vs-alg1",
        figure: "Fig. 3a, Obs. 2",
        description: "The trained 3-layer model is Algorithm 1 with its own (η_x, η_y): |err_TF − err_Alg| ≤ max(0.01, 30 %) at L = 120, and both lose to ridge. The paper adds that both beat 3-step GD; that holds only for a GD step below about 0.7 (spec §5: at η = 1, 3-step GD's error is 0.016 against Algorithm 1's 0.033 with Table 1's steps), so it is not part of the verdict: the note gives 3-step GD at η = 1 and whether the model beats it",
        runs: vec!["softmax-t3".into()],
        measure: Box::new(|r| {
            let rows = ml_eval(r, "softmax-t3", MlEvalOptions::default())?;
            let (tf, alg, gd, ridge) = (
                risk(&rows, "model", 120),
                risk(&rows, "alg1", 120),
                risk(&rows, "gd3", 120),
                risk(&rows, "ridge", 120),
            );
            let gap = (tf - alg).abs();
            let tol = (0.3 * alg).max(0.01);
            let mut c = within(f64::NAN, gap, None, 0.0, tol, "");
            c.pass &= ridge < tf && ridge < alg;
            c.note = format!(
                "TF {tf:.4}, Alg 1 {alg:.4}, 3-step GD (η = 1) {gd:.4} ({}), ridge {ridge:.5}",
                if tf < gd {
                    "the model beats it, as the paper says"
                } else {
                    "the model does not beat it, unlike the paper's figure"
                }
            );
            Ok(c)
        }),
    });
    defs.push(ClaimDef {
        id: "ood-trained",
        figure: "Fig. 24, C.7",
        description: "The trained 3-layer model tolerates a moderate eigenvalue shift and degrades as it grows: in distribution < U(0.9,1.3) < U(1.1,1.5) < U(1.3,1.7), and fails at U(3,4); measured: the U(3,4) error",
        runs: vec!["softmax-t3".into()],
        measure: Box::new(|r| {
            let e: Vec<f64> = [(0.8, 1.2), (0.9, 1.3), (1.1, 1.5), (1.3, 1.7), (3.0, 4.0)]
                .iter()
                .map(|&range| {
                    let ml = MlEvalOptions {
                        lambda_range: Some(range),
                        ..Default::default()
                    };
                    let rows = ml_eval(r, "softmax-t3", ml)?;
                    Ok(risk(&rows, "model", 120))
                })
                .collect::<Result<_>>()?;
            let ordered = e.windows(2).all(|w| w[1] > w[0]);
            Ok(Measured {
                paper_value: f64::NAN,
                measured: e[4],
                stderr: None,
                exact: None,
                paper_form: None,
                tolerance: "ordered, and ≥ max(1.0, 10 × in distribution) at U(3,4)".into(),
                pass: ordered && e[4] >= 1.0 && e[4] >= 10.0 * e[0],
                note: format!("errors {}", fmt_list(&e)),
            })
        }),
    });
    defs.push(ClaimDef {
        id: "iv-2stage",
        figure: "Fig. 5a, Obs. 5",
        description: "The two-stage transformer beats OLS and the one-stage TF Ref at L = 200 (measured: its error; the note gives the interpreted algorithm's ceiling, Algorithm 1 on the ideal stage-1 fit with in-sample tuned steps)",
        runs: vec!["iv-2stage".into(), "iv-tf-ref".into()],
        measure: Box::new(|r| {
            let rows = eval_run(
                &RunDir::new(r.path("iv-2stage")),
                &EvalOptions {
                    lengths: vec![200],
                    samples: 2000,
                    seed: 0,
                    engine: None,
                    multilayer: MlEvalOptions {
                        reference: Some(r.path("iv-tf-ref")),
                        ..Default::default()
                    },
                    temper: Default::default(),
                },
            )?;
            let g = |e: &str| risk(&rows, e, 200);
            let (tf, ols, tref, tsls, ceil) =
                (g("model"), g("ols"), g("tf_ref"), g("2sls"), g("alg1_ideal_2stage"));
            Ok(Measured {
                paper_value: f64::NAN,
                measured: tf,
                stderr: None,
                exact: None,
                paper_form: None,
                tolerance: format!("< OLS {ols:.4} and < TF Ref {tref:.4}"),
                pass: tf < ols && tf < tref,
                note: format!(
                    "2SLS {tsls:.4}; the interpreted algorithm's ceiling {ceil:.4}{}",
                    if ceil > ols {
                        " is itself above OLS: under the spec's (Liang et al.) data law no stage 2 implementing Algorithm 1 can beat OLS (README, issue note)"
                    } else {
                        ""
                    }
                ),
            })
        }),
    });
}

/// `icl eval` of a transformer run at L = 120 (4000 sequences, evaluation seed 0) with the
/// transformer options `ml` (stacking, a test eigenvalue range).
fn ml_eval(r: &Runs, name: &str, ml: MlEvalOptions) -> Result<EvalRows> {
    eval_run(
        &RunDir::new(r.path(name)),
        &EvalOptions {
            lengths: vec![120],
            samples: 4000,
            seed: 0,
            engine: None,
            multilayer: ml,
            temper: Default::default(),
        },
    )
}

/// The risk of `estimator` at length `len` (NaN when absent).
fn risk(rows: &EvalRows, estimator: &str, len: usize) -> f64 {
    rows.rows
        .iter()
        .find(|x| x.estimator == estimator && x.len == len)
        .map_or(f64::NAN, |x| x.risk)
}
