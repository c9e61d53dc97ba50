//! Risk at every prompt position of a GPT-2 model and of the classical estimators (Garg et al.
//! 2022, Fig. 2): on `n` prompts of `len + 1` pairs from the streams (seed, [`Domain::Eval`],
//! len, i), the squared error of the prediction of y_i from the i pairs before it, for every
//! i = 0..=len. Every estimator sees the same prompts (paired differences), a fitted one
//! ([`Estimator::fitted`]) the first [`FIT_PROMPTS`] of them; the error is raw (against the label
//! as sampled, noise included), not divided by d.
use super::kernels::{prompt_of_batch, Gpt2Runner};
use super::spec::Gpt2Spec;
use crate::data::{Batch, Task};
use crate::estimator::{Acc, Estimator, RiskEstimate, FIT_PROMPTS};
use crate::rng::Domain;
use crate::{Error, Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Prompts evaluated at a time.
const CHUNK: usize = 256;

/// Risks at every position: `risks[j][i]` is the estimate of the model at `taus[j]` (first, one
/// per tau) or of estimator `j - taus.len()` at position i (i pairs before it), i = 0..=len.
#[allow(clippy::too_many_arguments)]
pub fn position_risks<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    runner: &mut Gpt2Runner<T>,
    taus: &[f64],
    estimators: &[Estimator],
) -> Result<Vec<Vec<RiskEstimate>>> {
    risks_on(
        spec,
        params,
        task,
        (Domain::Eval, len, n, seed),
        runner,
        taus,
        estimators,
    )
}

/// The temperature `opt` of every position (Garg et al.'s model predicts at all of them in one
/// pass): on `n` held-out prompts of `len + 1` pairs from the streams (seed, [`Domain::Tune`],
/// len, i), the model's risk at every point of [`crate::tempered::opt_grid`]; for each position
/// i = 0..=len the grid point of least held-out risk (the one nearest 1 on a tie). Returns (tau,
/// held-out risk) per position. Unlike the one-layer models' `opt` there is no golden-section
/// refinement after the grid: it would cost forward passes per position, and the grid's spacing
/// (a factor of 1.133) moves the risk near its minimum by little.
#[allow(clippy::too_many_arguments)]
pub fn select_position_taus<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    runner: &mut Gpt2Runner<T>,
) -> Result<Vec<(f64, f64)>> {
    let grid: Vec<f64> = crate::tempered::opt_grid().collect();
    let held = risks_on(
        spec,
        params,
        task,
        (Domain::Tune, len, n, seed),
        runner,
        &grid,
        &[],
    )?;
    // on a tie the temperature nearest 1 in log tau (at position 0 a token attends to itself
    // alone and every temperature ties: tau = 1)
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| {
        libm::fabs(libm::log(grid[a])).total_cmp(&libm::fabs(libm::log(grid[b])))
    });
    Ok((0..=len)
        .map(|i| {
            let mut best = (f64::NAN, f64::INFINITY);
            for &j in &order {
                if held[j][i].risk < best.1 {
                    best = (grid[j], held[j][i].risk);
                }
            }
            best
        })
        .collect())
}

/// [`position_risks`] on the prompts of `(domain, len, n, seed)`.
fn risks_on<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    task: &Task,
    (domain, len, n, seed): (Domain, usize, usize, u64),
    runner: &mut Gpt2Runner<T>,
    taus: &[f64],
    estimators: &[Estimator],
) -> Result<Vec<Vec<RiskEstimate>>> {
    if n < 2 {
        return Err(Error::InvalidConfig(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    crate::budget::samples(n as u64, "samples")?;
    if len + 1 > spec.positions {
        return Err(Error::InvalidArgument(alloc::format!(
            "L = {len}: the model has positions for {} pairs (L <= {})",
            spec.positions,
            spec.positions - 1
        )));
    }
    for e in estimators {
        e.validate(task.d)?;
    }
    let (d, k) = (task.d, len + 1);
    let mut accs = vec![vec![Acc::default(); k]; taus.len() + estimators.len()];
    let mut normals = Vec::new();
    let mut first = 0;
    while first < n {
        let m = CHUNK.min(n - first);
        let mut batch = Batch::<T>::try_zeros(m, len, d, 1)?;
        task.sample_into(
            seed,
            domain,
            len as u64,
            first as u64,
            &mut batch,
            &mut normals,
        );
        // the prompts as (x_i, y_i), i = 0..=len
        let mut xs = vec![T::zero(); m * k * d];
        let mut ys = vec![T::zero(); m * k];
        for b in 0..m {
            prompt_of_batch(
                &batch,
                b,
                &mut xs[b * k * d..(b + 1) * k * d],
                &mut ys[b * k..(b + 1) * k],
            );
        }
        let mut pred = vec![T::zero(); m * k];
        for (j, &tau) in taus.iter().enumerate() {
            let sp = Gpt2Spec {
                tau,
                ..spec.clone()
            };
            runner.predict(&sp, params, &xs, &ys, m, k, &mut pred)?;
            for b in 0..m {
                for i in 0..k {
                    let e = pred[b * k + i].to_f64() - ys[b * k + i].to_f64();
                    accs[j][i].push(e * e);
                }
            }
        }
        // estimators: the prefix of i pairs with pair i as the query
        for i in 0..k {
            let mut pre = Batch::<f64>::try_zeros(m, i, d, 1)?;
            for b in 0..m {
                let seq = batch.seq(b);
                let z = &mut pre.z[b * (i + 1) * (d + 1)..(b + 1) * (i + 1) * (d + 1)];
                for (t, v) in z.iter_mut().enumerate() {
                    *v = seq[t].to_f64();
                }
                // the query's y slot is zero, its target the label
                z[i * (d + 1) + d] = 0.0;
                pre.y[b] = ys[b * k + i].to_f64();
            }
            for (j, est) in estimators.iter().enumerate() {
                let upto = if est.fitted() {
                    FIT_PROMPTS.saturating_sub(first).min(m)
                } else {
                    m
                };
                // each prompt's fit alone (on the engine's threads), added in prompt order
                let errs = runner.map_prompts(upto, &|b| {
                    let mut out = [0.0f64];
                    est.predict(&pre, b, &mut out)?;
                    let e = out[0] - pre.y[b];
                    Ok(e * e)
                })?;
                for e2 in errs {
                    accs[taus.len() + j][i].push(e2);
                }
            }
        }
        first += m;
    }
    let res: Vec<Vec<RiskEstimate>> = accs
        .iter()
        .map(|a| a.iter().map(Acc::finish).collect())
        .collect();
    if let Some(bad) = res.iter().flatten().find(|r| !r.risk.is_finite()) {
        return Err(Error::Numerical(alloc::format!(
            "a risk is not finite ({})",
            bad.risk
        )));
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Garg et al.'s linear regression at d = 3 with prompts of up to `len` pairs before the
    /// last, and a GPT-2 of `layers` layers, 2 heads, n_embd 8 for it.
    fn small(len: usize, layers: usize) -> (Task, Gpt2Spec) {
        let mut cfg = crate::presets::preset("garg-linear-tiny").unwrap();
        cfg.set("task.d", "3").unwrap();
        cfg.set("task.L", &alloc::format!("{len}")).unwrap();
        let spec = Gpt2Spec {
            d: 3,
            embd: 8,
            layers,
            heads: 2,
            positions: len + 1,
            tau: 1.0,
        };
        (Task::new(&cfg).unwrap(), spec)
    }

    /// On Garg et al.'s data (x, w ~ N(0, I_d), no noise) every estimator's error before any
    /// example is E[y^2] = d; least squares is exact from d examples on; the averaging
    /// estimator's error at i examples is E|(S - I) w|^2 with S = (1/i) sum x_l x_l^T, and
    /// E[(S - I)^2] = (d + 1)/i I (Wishart moments), E|w|^2 = d: d (d + 1) / i.
    #[test]
    fn estimators_at_every_position_match_closed_forms() {
        let (task, spec) = small(8, 1);
        let params: Vec<f64> = super::super::init::init_params(&spec, 1);
        let n = 4000;
        let ests = [
            Estimator::Lstsq,
            Estimator::Knn { k: 3 },
            Estimator::Averaging,
        ];
        let mut runner = Gpt2Runner::scalar();
        let r = position_risks(&spec, &params, &task, 8, n, 5, &mut runner, &[1.0], &ests).unwrap();
        assert_eq!(r.len(), 4);
        assert!(r.iter().all(|per| per.len() == 9));
        let near = |got: &RiskEstimate, want: f64, what: &str| {
            assert!(
                (got.risk - want).abs() < 4.0 * got.stderr + 1e-9,
                "{what}: {} ± {} vs {want}",
                got.risk,
                got.stderr
            );
        };
        for j in 1..4 {
            near(&r[j][0], 3.0, "no examples");
        }
        for i in 3..9 {
            assert!(r[1][i].risk < 1e-18, "lstsq at {i}: {}", r[1][i].risk);
        }
        for i in [1usize, 2, 4, 8] {
            near(
                &r[3][i],
                3.0 * 4.0 / i as f64,
                &alloc::format!("averaging at {i}"),
            );
        }
    }

    /// Scaling every layer's query (c_attn's q columns and bias) by c scales every logit by c,
    /// so the model at tau c predicts as the original at tau: with c two grid steps, the scaled
    /// model's held-out risk at grid point j + 2 is the original's at j, at every position (an
    /// independent check that the temperature reaches every layer and head). `opt` takes the
    /// held-out minimum at every position, tau = 1 at position 0 where a token attends to itself
    /// alone and every temperature ties.
    #[test]
    fn opt_follows_a_rescaled_query() {
        let (task, spec) = small(6, 2);
        let scale_q = |params: &mut [f64], c: f64| {
            let ts = spec.tensors();
            let (w, b) = (
                ts.iter().find(|t| t.name == "attn.c_attn.weight").unwrap(),
                ts.iter().find(|t| t.name == "attn.c_attn.bias").unwrap(),
            );
            let e = spec.embd;
            for l in 0..spec.layers {
                for r in 0..e {
                    for q in 0..e {
                        params[w.offset + l * e * 3 * e + r * 3 * e + q] *= c;
                    }
                }
                for q in 0..e {
                    params[b.offset + l * 3 * e + q] *= c;
                }
            }
        };
        let mut base: Vec<f64> = super::super::init::init_params(&spec, 3);
        // logits of order one, so that the temperature matters
        scale_q(&mut base, 1000.0);
        // and predictions of order one, so that the risk sees the attention
        let ro = spec
            .tensors()
            .into_iter()
            .find(|t| t.name == "read_out.weight")
            .unwrap();
        base[ro.offset..ro.offset + ro.len()]
            .iter_mut()
            .for_each(|w| *w *= 30.0);
        let grid: Vec<f64> = crate::tempered::opt_grid().collect();
        let mut scaled = base.clone();
        scale_q(&mut scaled, grid[2] / grid[0]);
        let mut runner = Gpt2Runner::scalar();
        let held = |params: &[f64], runner: &mut Gpt2Runner<f64>| {
            let r = risks_on(
                &spec,
                params,
                &task,
                (Domain::Tune, 6, 300, 9),
                runner,
                &grid,
                &[],
            )
            .unwrap();
            r.iter()
                .map(|per| per.iter().map(|x| x.risk).collect::<Vec<f64>>())
                .collect::<Vec<_>>()
        };
        let (rb, rs) = (held(&base, &mut runner), held(&scaled, &mut runner));
        for j in 0..grid.len() - 2 {
            for i in 0..7 {
                assert!(
                    (rs[j + 2][i] - rb[j][i]).abs() <= 1e-9 * rb[j][i],
                    "grid {j}, position {i}: {} vs {}",
                    rs[j + 2][i],
                    rb[j][i]
                );
            }
        }
        // the temperature changes the risk somewhere
        assert!(
            (1..7).any(|i| (rb[0][i] - rb[48][i]).abs() > 1e-3 * rb[0][i]),
            "{:?} {:?}",
            rb[0],
            rb[48]
        );
        let chosen = select_position_taus(&spec, &base, &task, 6, 300, 9, &mut runner).unwrap();
        assert_eq!(chosen[0].0, grid[24]);
        for (i, c) in chosen.iter().enumerate() {
            let min = (0..grid.len())
                .map(|j| rb[j][i])
                .fold(f64::INFINITY, f64::min);
            let j = grid.iter().position(|&g| g == c.0).unwrap();
            assert_eq!((c.1, rb[j][i]), (min, min), "position {i}");
        }
    }
}
