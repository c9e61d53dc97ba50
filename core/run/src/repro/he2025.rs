//! He et al. 2025 (one-layer multi-head softmax attention): the runs and the claims.
//!
//! Smoke scale: 4e4 steps instead of 5e5 (the heads have split and ω has nearly settled by then:
//! ω ≈ 0.14 against 0.127 at 5e5), 3 seeds for H = 2, one for H = 1. Paper scale: 5e5 steps,
//! 5 seeds for H = 2, H = 1 and H = 4.
use super::{in_range, mean_se, spec, theory, within, ClaimDef, Measured, RunSpec, Runs, Scale};
use crate::error::Result;
use crate::summary::Summary;

/// The he2025 runs and claims at a scale.
pub(super) fn plan(scale: Scale) -> (Vec<RunSpec>, Vec<ClaimDef>) {
    let (steps, seeds) = match scale {
        Scale::Smoke => (40_000u64, 3u64),
        Scale::Paper => (500_000, 5),
    };
    let st = steps.to_string();
    let h2: Vec<String> = (1..=seeds).map(|s| format!("h2-seed{s}")).collect();
    let h1 = vec![String::from("h1-seed1")];
    let mut specs: Vec<RunSpec> = (1..=seeds)
        .map(|s| {
            spec(
                format!("h2-seed{s}"),
                "he2025",
                &[("train.steps", st.clone()), ("train.seed", s.to_string())],
            )
        })
        .collect();
    specs.push(spec(
        "h1-seed1",
        "he2025-h1",
        &[("train.steps", st.clone()), ("train.seed", "1".into())],
    ));
    let split_note = "measured on the seeds whose heads split into a positive and a negative head";
    let defs = vec![
        ClaimDef {
            id: "mu-gamma",
            figure: "eq. 4.5",
            description: "On the solution manifold the OV value at the trained KQ scale γ = 0.1267 is μ_γ; the paper's trained μ is 3.5006 (a 0.9 % gap is expected: the trained model is not exactly on the approximate loss's manifold)",
            runs: vec![],
            measure: Box::new(|_| {
                let m = theory("mu-gamma", &[("gamma", "0.1267")])?;
                Ok(Measured {
                    paper_value: 3.5006,
                    measured: m,
                    stderr: None,
                    tolerance: "within 1 % of 3.5006".into(),
                    pass: ((m - 3.5006) / 3.5006).abs() <= 0.01,
                    note: String::new(),
                })
            }),
        },
        ClaimDef {
            id: "eta-star",
            figure: "Thm 4.2, Table 1",
            description: "The optimal debiased-GD step η* = L/(d(1+σ²)+L) ≈ 0.879 is the effective step of the f₁ rows of Table 1",
            runs: vec![],
            measure: Box::new(|_| {
                let m = theory("eta-star", &[])?;
                Ok(within(0.879, m, None, 0.879, 5e-4, ""))
            }),
        },
        ClaimDef {
            id: "h2-split",
            figure: "Fig. 1a",
            description: "A two-head model learns one positive and one negative head (fraction of seeds that split; the others stay in a same-sign state)",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let ss = summaries(r, &h2_names(seeds))?;
                let split: Vec<&Summary> = ss.iter().filter(|s| is_split(s)).collect();
                let frac = split.len() as f64 / ss.len() as f64;
                let risk = |v: Vec<&Summary>| -> String {
                    let x: Vec<f64> = v.iter().filter_map(|s| s.risk.as_ref().map(|r| r.risk)).collect();
                    let (m, _) = mean_se(&x);
                    if x.is_empty() { "none".into() } else { format!("{m:.4}") }
                };
                let same: Vec<&Summary> = ss.iter().filter(|s| !is_split(s)).collect();
                Ok(Measured {
                    paper_value: 1.0,
                    measured: frac,
                    stderr: None,
                    tolerance: "at least one seed splits (the paper shows one run)".into(),
                    pass: !split.is_empty(),
                    note: format!(
                        "{} of {} seeds split; risk at L = 40: split {}, same-sign {}",
                        split.len(),
                        ss.len(),
                        risk(split),
                        risk(same)
                    ),
                })
            }),
        },
        ClaimDef {
            id: "h2-sign-matching",
            figure: "Fig. 1a",
            description: "Sign matching: in every head the KQ and OV signs agree (fraction of split seeds where it holds)",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let ss = split_summaries(r, seeds)?;
                let ok = ss.iter().filter(|s| s.sign_matching == Some(true)).count();
                let frac = if ss.is_empty() { 0.0 } else { ok as f64 / ss.len() as f64 };
                Ok(within(1.0, frac, None, 1.0, 0.0, split_note))
            }),
        },
        ClaimDef {
            id: "h2-omega",
            figure: "Fig. 1, Table 1",
            description: "The KQ scale of each head |ω| ≈ 0.1267",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let v: Vec<f64> = split_summaries(r, seeds)?
                    .iter()
                    .flat_map(|s| s.heads.iter().map(|h| h.omega.abs()))
                    .collect();
                let (m, se) = mean_se(&v);
                Ok(in_range(0.1267, m, Some(se), 0.10, 0.16, split_note))
            }),
        },
        ClaimDef {
            id: "h2-mu",
            figure: "Fig. 1, Table 1",
            description: "The OV value of each head |μ| ≈ 3.5006, the two heads opposite: |μ₊ + μ₋| ≤ 0.05 μ₊ (measured: the mean |μ|; the balance is checked too)",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let ss = split_summaries(r, seeds)?;
                let v: Vec<f64> = ss.iter().flat_map(|s| s.heads.iter().map(|h| h.mu.abs())).collect();
                let balanced = ss.iter().all(|s| {
                    let sum: f64 = s.heads.iter().map(|h| h.mu).sum();
                    let mp = s.heads.iter().map(|h| h.mu.abs()).fold(0.0, f64::max);
                    sum.abs() <= 0.05 * mp
                });
                let (m, se) = mean_se(&v);
                let mut c = in_range(3.5006, m, Some(se), 3.5006 * 0.85, 3.5006 * 1.15, split_note);
                c.pass &= balanced;
                if !balanced {
                    c.note.push_str("; |μ₊ + μ₋| > 0.05 μ₊ in some seed");
                }
                Ok(c)
            }),
        },
        ClaimDef {
            id: "h2-eta-eff",
            figure: "Table 1 (exp)",
            description: "The effective step 2|ω⁽¹⁾||μ⁽¹⁾| = 0.8871",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let v: Vec<f64> = split_summaries(r, seeds)?.iter().filter_map(|s| s.eta_eff).collect();
                let (m, se) = mean_se(&v);
                Ok(in_range(0.8871, m, Some(se), 0.84, 0.93, split_note))
            }),
        },
        ClaimDef {
            id: "h2-risk",
            figure: "Fig. 3",
            description: "Test risk at L' = 40 of the two-head model ≈ debiased GD's: 0.2435 (the spec's Monte Carlo at the paper's trained (ω, μ); the paper plots it)",
            runs: h2.clone(),
            measure: Box::new(move |r| {
                let v: Vec<f64> = split_summaries(r, seeds)?
                    .iter()
                    .filter_map(|s| s.risk.as_ref().map(|x| x.risk))
                    .collect();
                let (m, se) = mean_se(&v);
                Ok(within(0.2435, m, Some(se), 0.2435, 0.006, split_note))
            }),
        },
        ClaimDef {
            id: "h1-omega",
            figure: "Fig. 2a",
            description: "A single head learns ω ≈ 0.52 (≈ 1/√d)",
            runs: h1.clone(),
            measure: Box::new(|r| {
                let s = r.summary("h1-seed1")?;
                let w = s.heads.first().map(|h| h.omega.abs()).unwrap_or(f64::NAN);
                Ok(in_range(0.52, w, None, 0.45, 0.58, ""))
            }),
        },
        ClaimDef {
            id: "h1-mu",
            figure: "Fig. 2a",
            description: "A single head learns μ ≈ 1.42",
            runs: h1.clone(),
            measure: Box::new(|r| {
                let s = r.summary("h1-seed1")?;
                let m = s.heads.first().map(|h| h.mu.abs()).unwrap_or(f64::NAN);
                Ok(in_range(1.42, m, None, 1.3, 1.7, ""))
            }),
        },
        ClaimDef {
            id: "h1-risk",
            figure: "Fig. 3",
            description: "One head is a Nadaraya–Watson estimator, far worse than two: risk at L' = 40 ≈ 0.404 (the spec's Monte Carlo at the paper's (0.52, 1.42))",
            runs: h1,
            measure: Box::new(|r| {
                let s = r.summary("h1-seed1")?;
                let m = s.risk.as_ref().map(|x| x.risk).unwrap_or(f64::NAN);
                Ok(within(0.4047, m, None, 0.4047, 0.01, ""))
            }),
        },
    ];
    (specs, defs)
}

fn h2_names(seeds: u64) -> Vec<String> {
    (1..=seeds).map(|s| format!("h2-seed{s}")).collect()
}

fn summaries(r: &Runs, names: &[String]) -> Result<Vec<Summary>> {
    names.iter().map(|n| r.summary(n)).collect()
}

/// Two heads of opposite kinds (one positive, one negative).
fn is_split(s: &Summary) -> bool {
    s.heads.iter().any(|h| h.kind == "positive") && s.heads.iter().any(|h| h.kind == "negative")
}

fn split_summaries(r: &Runs, seeds: u64) -> Result<Vec<Summary>> {
    Ok(summaries(r, &h2_names(seeds))?
        .into_iter()
        .filter(is_split)
        .collect())
}
