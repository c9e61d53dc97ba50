//! The multilayer paper (looped transformers on varying-covariance regression, Algorithm 1,
//! in-context IV regression): the runs and the claims.
//!
//! Smoke scale checks the claims that need no training, by Monte Carlo through the theory
//! registry (4000 sequences, noise-free target, raw errors): Algorithm 1 with the paper's
//! Table-1 step sizes (its error is minimal at s = T steps: Obs. 4, Fig. 4b), the baselines,
//! the 3-step GD step size (Fig. 23), the out-of-distribution ordering (Fig. 24) and the IV
//! baselines (Fig. 5a). Paper scale adds the trained models of §7 (looped softmax T = 1..4, T = 2
//! at three seeds for the spread of Table 1, and linear T = 2..4, H = 2 / 1, d = 5, L = 120,
//! batch 256, the presets' step counts; the IV two-block model and TF Ref) and the claims
//! measured on them (depth, Table 1, stacking, TF ≈ Algorithm 1, OOD, IV). Errors are measured
//! against the noise-free target, not divided by d.
use super::claim::{claim, fmt_list, mean_se, ClaimDef, Reading, Tolerance};
use super::{risk_se, spec, theory_list, RunSpec, Runs, Scale};
use crate::error::{Result, RunError};
use crate::eval::MlEvalOptions;
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

/// The seeds of the softmax T = 2 runs whose spread Table 1's T = 2 claims show: the preset's
/// (`softmax-t2`) and the next two (`softmax-t2-seed2`, `-seed3`).
const T2_SEEDS: [u64; 3] = [1029, 1030, 1031];

/// The runs of [`T2_SEEDS`], the preset's seed first.
fn t2_seed_runs() -> Vec<String> {
    (1..=T2_SEEDS.len())
        .map(|k| {
            if k == 1 {
                "softmax-t2".to_string()
            } else {
                format!("softmax-t2-seed{k}")
            }
        })
        .collect()
}

/// The eigenvalue ranges of the out-of-distribution claims (Fig. 24, C.7): the training one,
/// three moderate shifts and a large one.
const OOD_RANGES: [(f64, f64); 5] = [(0.8, 1.2), (0.9, 1.3), (1.1, 1.5), (1.3, 1.7), (3.0, 4.0)];

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

/// An out-of-distribution claim's reading from the errors at [`OOD_RANGES`]: they grow with the
/// shift, and the last is at least 1.0 and 10 times the in-distribution one.
fn ood(e: Vec<f64>) -> Reading {
    let ordered = e.windows(2).all(|w| w[1] > w[0]);
    Reading::new(e[4])
        .and(ordered && e[4] >= 1.0 && e[4] >= 10.0 * e[0])
        .note(format!("errors {}", fmt_list(&e)))
}

/// The words of an out-of-distribution claim's tolerance.
const OOD_TOLERANCE: &str = "ordered, and ≥ max(1.0, 10 × in distribution) at U(3,4)";

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
        defs.push(
            claim(format!("alg1-depth-t{t}"), "Obs. 4, Fig. 4b, Table 1", [
                "Algorithm 1 with the trained 2-layer step sizes (Table 1) is best after exactly 2 steps and diverges after (err(4) > 5 err(2)); measured: err(2), the spec's Monte Carlo 0.095 ± 25 %",
                "Algorithm 1 with the trained 3-layer step sizes (Table 1) is best after exactly 3 steps and diverges after (err(6) > 5 err(3)); measured: err(3), the spec's Monte Carlo 0.033 ± 25 %",
                "Algorithm 1 with the trained 4-layer step sizes (Table 1) is best after exactly 4 steps and diverges after (err(8) > 5 err(4)); measured: err(4), the spec's Monte Carlo 0.012 ± 25 %",
            ][k])
            .paper(target)
            .range(target * 0.75, target * 1.25)
            .measure(move |_| {
                let e = alg1(-u1, u2, 2 * t, 0.8, 1.2)?;
                let best = argmin(&e) + 1;
                let (at, twice) = (e[t - 1], e[2 * t - 1]);
                Ok(Reading::new(at).and(best == t && twice > 5.0 * at).note(format!(
                    "errors after s = 1..{}: {} (argmin s = {best}; err(2T)/err(T) = {:.1})",
                    2 * t,
                    fmt_list(&e),
                    twice / at
                )))
            }),
        );
    }
    defs.push(
        claim("ridge-l120", "Fig. 1a, 3a", "The ridge (λ = 0.1) baseline at L = 120 (the spec's Monte Carlo 0.0042 ± 15 %; OLS beside it)")
            .paper(0.0042)
            .range(0.0042 * 0.85, 0.0042 * 1.15)
            .measure(|_| {
                let v = theory_list::<&str>("regression-baselines", &[])?;
                let (ols, ridge) = (v[0], v[1]);
                Ok(Reading::new(ridge).note(format!("OLS {ols:.5}")))
            }),
    );
    defs.push(
        claim("gd3-eta", "Fig. 23", "The best step size of 3-step GD on a grid is η* = 1.1 (the spec's Monte Carlo finds 0.9; accepted: [0.8, 1.2]); measured: the grid argmin over 0.5, 0.55, …, 1.5")
            .paper(1.1)
            .range(0.8, 1.2)
            .measure(|_| {
                let grid: Vec<f64> = (0..=20).map(|i| 0.5 + 0.05 * i as f64).collect();
                let errs: Vec<f64> = grid
                    .iter()
                    .map(|&eta| {
                        theory_list("gd-steps-risk", &[("eta", eta.to_string()), ("steps", "3".into())])
                            .map(|v| v[2])
                    })
                    .collect::<Result<_>>()?;
                let k = argmin(&errs);
                Ok(Reading::new(grid[k]).note(format!(
                    "3-step GD error {:.4} at η = {:.2}; at η = 1.1: {:.4} (the paper's η* is not the minimiser under this data law)",
                    errs[k], grid[k], errs[12]
                )))
            }),
    );
    defs.push(
        claim("alg1-beats-gd3", "Fig. 3a, Obs. 2", "The paper's \"both beat 3-step GD\", for the interpreted algorithm: Algorithm 1 with Table 1's 3-layer steps (0.6128, 0.7193) after 3 steps is below 3-step GD at η = 1, the step the spec names for the paper's GD baseline (§5: the paper never states η; report GD at η = 1 and at the tuned η; the tuned GD is better than Algorithm 1 by the paper's own C.6). No number in the paper; measured: err_Alg(3) − err_GD(3), η = 1 (Monte Carlo, 4000 sequences)")
            .stated("< 0 (Algorithm 1 below 3-step GD at η = 1)")
            .source("the paper (Fig. 3a, Obs. 2), at the η of spec multilayer §5")
            .measure(|_| {
                let (u1, u2) = (TABLE1_SOFTMAX[1].1, TABLE1_SOFTMAX[1].2);
                let alg = alg1(-u1, u2, 3, 0.8, 1.2)?[2];
                let gd = |eta: f64| -> Result<f64> {
                    Ok(theory_list("gd-steps-risk", &[("eta", eta.to_string()), ("steps", "3".into())])?[2])
                };
                let (g1, g07) = (gd(1.0)?, gd(0.7)?);
                Ok(Reading::new(alg - g1).and(alg < g1).note(format!(
                    "Algorithm 1 {alg:.4}, 3-step GD {g1:.4} at η = 1 and {g07:.4} at η = 0.7{}",
                    if alg < g1 {
                        ""
                    } else {
                        ": the paper's statement needs a GD step below about 0.7 (spec §5), which the paper does not state; at η = 1 it does not hold"
                    }
                )))
            }),
    );
    defs.push(
        claim("alg1-ood", "Fig. 24, C.7", "Out of distribution (Algorithm 1, Table-1 3-layer steps): the error grows with the eigenvalue shift, U(0.8,1.2) < U(0.9,1.3) < U(1.1,1.5) < U(1.3,1.7), and fails at U(3,4) (≥ 1.0 and ≥ 10× in distribution); measured: the U(3,4) error")
            .stated(OOD_TOLERANCE)
            .measure(|_| {
                let (u1, u2) = (TABLE1_SOFTMAX[1].1, TABLE1_SOFTMAX[1].2);
                let e: Vec<f64> = OOD_RANGES
                    .iter()
                    .map(|&(lo, hi)| alg1(-u1, u2, 3, lo, hi).map(|v| v[2]))
                    .collect::<Result<_>>()?;
                Ok(ood(e))
            }),
    );
    defs.push(
        claim("iv-2sls-vs-ols", "Fig. 5a", "In-context IV (q = 6, p = 4, L = 200): 2SLS is below OLS, the endogeneity bias OLS cannot remove (the paper's ordering, no number); measured: 2SLS error (noise-free y_q)")
            .source("the paper (Fig. 5a)")
            .measure(|_| {
                let v = theory_list::<&str>("iv-risk", &[])?;
                let (tsls, ols) = (v[0], v[1]);
                Ok(Reading::new(tsls)
                    .tolerance(Tolerance::Stated(format!("< OLS {ols:.4}")))
                    .and(tsls < ols)
                    .note(format!("OLS {ols:.4}")))
            }),
    );
    defs.push(super::iv_study::claim_def());
    defs
}

/// The paper-scale trained runs and their claims.
fn trained(specs: &mut Vec<RunSpec>, defs: &mut Vec<ClaimDef>) {
    for t in 1..=4 {
        specs.push(spec(
            format!("softmax-t{t}"),
            &format!("multilayer-t{t}"),
            &[],
        ));
    }
    for t in 2..=4 {
        specs.push(spec(
            format!("linear-t{t}"),
            &format!("multilayer-linear-t{t}"),
            &[],
        ));
    }
    // the seed-to-seed spread of Table 1 at T = 2: two more seeds of the softmax T = 2 run
    for (k, seed) in T2_SEEDS.iter().enumerate().skip(1) {
        specs.push(spec(
            format!("softmax-t2-seed{}", k + 1),
            "multilayer-t2",
            &[("train.seed", seed.to_string())],
        ));
    }
    specs.push(spec("iv-2stage", "iv-2stage", &[]));
    specs.push(spec("iv-tf-ref", "iv-tf-ref", &[]));
    let soft: Vec<String> = (1..=4).map(|t| format!("softmax-t{t}")).collect();

    defs.push(
        claim("depth", "Fig. 1a, Obs. 1", "Depth helps and saturates: err(T=1) ≥ 0.2, err(2) < err(1)/2, err(3) ≤ err(2), |err(4) − err(3)| ≤ 0.03 (raw; the paper's < 0.01 fits /d), ridge < err(4) at L = 120; measured: |err(4) − err(3)|")
            .runs(&soft)
            .paper(0.01)
            .within(0.0, 0.03)
            .measure(|r| {
                let rows: Vec<EvalRows> = (1..=4)
                    .map(|t| ml_eval(r, &format!("softmax-t{t}"), MlEvalOptions::default()))
                    .collect::<Result<_>>()?;
                let e: Vec<f64> = rows.iter().map(|x| risk(x, "model", 120)).collect();
                let ridge = risk(&rows[3], "ridge", 120);
                let ok = e[0] >= 0.2 && e[1] < e[0] / 2.0 && e[2] <= e[1] && ridge < e[3];
                Ok(Reading::new((e[3] - e[2]).abs())
                    .and(ok)
                    .note(format!("err(T = 1..4) {}; ridge {ridge:.5}", fmt_list(&e))))
            }),
    );
    for (rows, kind, tol) in [
        (TABLE1_SOFTMAX, "softmax", 0.12),
        (TABLE1_LINEAR, "linear", 0.1),
    ] {
        for (t, u1, u2) in rows {
            let name = format!("{kind}-t{t}");
            // softmax T = 2 over three seeds (their mean and its standard error), the others one
            let runs: Vec<String> = if kind == "softmax" && t == 2 {
                t2_seed_runs()
            } else {
                vec![name.clone()]
            };
            for (j, paper) in [u1, u2].into_iter().enumerate() {
                let runs = runs.clone();
                defs.push(
                    claim(format!("table1-{name}-u{}", j + 1), "Table 1", if j == 0 {
                        "Table 1: the covariate step ⟨u₁, ω⟩ of the trained looped block (negative)"
                    } else {
                        "Table 1: the label step ⟨u₂, ω⟩ of the trained looped block (positive)"
                    })
                    .runs(runs.clone())
                    .paper(paper)
                    .within(paper, tol)
                    .measure(move |r| {
                        let v: Vec<f64> = runs
                            .iter()
                            .map(|n| {
                                let s = r.summary(n)?;
                                let ta = s.transformer.as_ref().ok_or_else(|| {
                                    RunError::Refused(format!("{n} is not a transformer run"))
                                })?;
                                Ok(if j == 0 { ta.u1_omega } else { ta.u2_omega }.unwrap_or(f64::NAN))
                            })
                            .collect::<Result<_>>()?;
                        if v.len() == 1 {
                            return Ok(Reading::new(v[0]));
                        }
                        let (m, se) = mean_se(&v);
                        let sd = se * (v.len() as f64).sqrt();
                        Ok(Reading::new(m).stderr(Some(se)).note(format!(
                            "the mean of {} seeds ({}: {}), their standard deviation {sd:.4}; the paper's is one run, {:+.1} of these standard deviations from the mean",
                            v.len(),
                            runs.join(", "),
                            fmt_list(&v),
                            (paper - m) / sd
                        )))
                    }),
                );
            }
        }
    }
    defs.push(
        claim("stacking", "Fig. 4b, Obs. 4", "Applying the trained 3-layer looped block twice (6 layers) raises the error at least 5×, and 3× or 4× raises it further; measured: err(2×)/err(1×)")
            .runs(["softmax-t3"])
            .stated("≥ 5, and err(3×), err(4×) ≥ err(2×)")
            .measure(|r| {
                let e: Vec<f64> = (1..=4)
                    .map(|k| {
                        let ml = MlEvalOptions { stack: Some(k), ..Default::default() };
                        Ok(risk(&ml_eval(r, "softmax-t3", ml)?, "model", 120))
                    })
                    .collect::<Result<_>>()?;
                let ratio = e[1] / e[0];
                Ok(Reading::new(ratio)
                    .and(Tolerance::Range(5.0, f64::INFINITY).holds(ratio) && e[2] >= e[1] && e[3] >= e[1])
                    .note(format!("errors for the block applied 1..4 times: {}", fmt_list(&e))))
            }),
    );
    defs.push(
        claim("tf-vs-alg1", "Fig. 3a, Obs. 2", "The trained 3-layer model is Algorithm 1 with its own (η_x, η_y): |err_TF − err_Alg| ≤ max(0.01, 30 %) at L = 120 (spec §9 test 13), both lose to ridge, and both beat 3-step GD (the paper's statement) at η = 1, the step the spec names for the paper's unstated GD baseline (§5; the spec's Monte Carlo: 3-step GD 0.016 at η = 1, Algorithm 1 with Table 1's steps 0.033, so the statement needs η ≤ 0.7, which the paper does not state). Measured: |err_TF − err_Alg|; the note gives GD at η = 1 and at the tuned η")
            .runs(["softmax-t3"])
            .source("spec multilayer §9 test 13 (TF ≈ Alg); the paper's Fig. 3a (beats 3-step GD), at η = 1 of spec §5")
            .measure(|r| {
                let rows = ml_eval(r, "softmax-t3", MlEvalOptions::default())?;
                let (tf, alg, gd, tuned, ridge) = (
                    risk(&rows, "model", 120),
                    risk(&rows, "alg1", 120),
                    risk(&rows, "gd3", 120),
                    risk(&rows, "gd3_tuned", 120),
                    risk(&rows, "ridge", 120),
                );
                let tol = (0.3 * alg).max(0.01);
                Ok(Reading::new((tf - alg).abs())
                    .tolerance(Tolerance::Stated(format!(
                        "≤ {tol:.4} (max(0.01, 30 % of Alg 1)); ridge below both; both below 3-step GD at η = 1"
                    )))
                    .and((tf - alg).abs() <= tol && ridge < tf && ridge < alg && tf < gd && alg < gd)
                    .note(format!(
                        "TF {tf:.4}, Alg 1 {alg:.4}, 3-step GD {gd:.4} at η = 1 ({}) and {tuned:.4} at the tuned η, ridge {ridge:.5}",
                        if tf < gd && alg < gd {
                            "both beat it, as the paper says"
                        } else {
                            "not both below it, unlike the paper's Fig. 3a: the paper's GD needs a step below about 0.7 (spec §5)"
                        }
                    )))
            }),
    );
    defs.push(
        claim("ood-trained", "Fig. 24, C.7", "The trained 3-layer model tolerates a moderate eigenvalue shift and degrades as it grows: in distribution < U(0.9,1.3) < U(1.1,1.5) < U(1.3,1.7), and fails at U(3,4); measured: the U(3,4) error")
            .runs(["softmax-t3"])
            .stated(OOD_TOLERANCE)
            .measure(|r| {
                let e: Vec<f64> = OOD_RANGES
                    .iter()
                    .map(|&range| {
                        let ml = MlEvalOptions { lambda_range: Some(range), ..Default::default() };
                        Ok(risk(&ml_eval(r, "softmax-t3", ml)?, "model", 120))
                    })
                    .collect::<Result<_>>()?;
                Ok(ood(e))
            }),
    );
    defs.push(
        claim("iv-2stage", "Fig. 5a, Obs. 5", "The paper's statement: the two-stage transformer is below OLS (and below the one-stage TF Ref) at L = 200; no number in the paper (measured: its error; the note gives the interpreted algorithm's ceiling, Algorithm 1 on the ideal stage-1 fit with in-sample tuned steps)")
            .runs(["iv-2stage", "iv-tf-ref"])
            .source("the paper (Fig. 5a, Obs. 5)")
            .measure(|r| {
                let ml = MlEvalOptions { reference: Some(r.path("iv-tf-ref")), ..Default::default() };
                let rows = r.eval("iv-2stage", &[200], 2000, ml, Default::default())?;
                let g = |e: &str| risk(&rows, e, 200);
                let (tf, ols, tref, tsls, ceil) =
                    (g("model"), g("ols"), g("tf_ref"), g("2sls"), g("alg1_ideal_2stage"));
                Ok(Reading::new(tf)
                    .tolerance(Tolerance::Stated(format!("< OLS {ols:.4} and < TF Ref {tref:.4}")))
                    .and(tf < ols && tf < tref)
                    .note(format!(
                        "2SLS {tsls:.4}; the interpreted algorithm's ceiling {ceil:.4}{}",
                        if ceil > ols {
                            " is itself above OLS: under the spec's (Liang et al.) data law no stage 2 implementing Algorithm 1 can beat OLS (README, issue note)"
                        } else {
                            ""
                        }
                    )))
            }),
    );
}

/// `icl eval` of a transformer run at L = 120 (4000 sequences) with the transformer options
/// `ml` (stacking, a test eigenvalue range).
fn ml_eval(r: &Runs, name: &str, ml: MlEvalOptions) -> Result<EvalRows> {
    r.eval(name, &[120], 4000, ml, Default::default())
}

/// The risk of `estimator` at length `len` (NaN when absent).
fn risk(rows: &EvalRows, estimator: &str, len: usize) -> f64 {
    risk_se(rows, estimator, len).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1's softmax T = 2 claims are measured over three runs of three different seeds,
    /// the first the preset's own (so `softmax-t2` is the run every other claim reads); the
    /// other Table 1 claims over one run each.
    #[test]
    fn table1_t2_is_measured_over_three_seeds() {
        let (specs, defs) = plan(Scale::Paper);
        let runs = |id: &str| defs.iter().find(|d| d.id == id).unwrap().runs.clone();
        let three = ["softmax-t2", "softmax-t2-seed2", "softmax-t2-seed3"];
        assert_eq!(runs("table1-softmax-t2-u1"), three);
        assert_eq!(runs("table1-softmax-t2-u2"), three);
        assert_eq!(runs("table1-softmax-t3-u1"), ["softmax-t3"]);
        assert_eq!(runs("table1-linear-t2-u2"), ["linear-t2"]);
        let seeds: Vec<u64> = three
            .iter()
            .map(|n| {
                let s = specs.iter().find(|s| s.name == *n).unwrap();
                let cfg = s.build().unwrap();
                assert_eq!(
                    cfg.train.steps,
                    icl_core::presets::preset("multilayer-t2")
                        .unwrap()
                        .train
                        .steps
                );
                cfg.train.seed
            })
            .collect();
        assert_eq!(seeds, [1029, 1030, 1031]);
        assert_eq!(
            seeds[0],
            icl_core::presets::preset("multilayer-t2")
                .unwrap()
                .train
                .seed
        );
        // the smoke scale trains nothing
        assert!(plan(Scale::Smoke).0.is_empty());
    }
}
