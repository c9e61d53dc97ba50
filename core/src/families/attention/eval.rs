//! Monte Carlo risk at any test length L' (length generalisation), for models and estimators.
//!
//! Risk = E[(y_q - yhat_q)^2] averaged over outputs, including the query noise (He et al. 2025 App. F).
//! All estimators and the model at a given L' see the same samples (stream (seed, Eval, L', i)),
//! so their differences have small paired error.
use super::kernels::Runner;
use crate::data::{Batch, Task};
pub use crate::estimator::RiskEstimate;
use crate::estimator::{Acc, Estimator};
use crate::model::Model;
use crate::rng::Domain;
use crate::{Error, Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

const CHUNK: usize = 1024;
/// Token values of one chunk at the most (128 MiB in f64), so long test lengths stay in memory.
const CHUNK_VALUES: usize = 1 << 24;

/// Evaluate the model (if given) and each estimator on `n` sequences of context length `len`.
/// Returns the model's estimate first (if any), then one per estimator, in order.
pub fn mc_risk<T: Scalar>(
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    model: Option<(&Model<T>, &mut Runner<T>)>,
    estimators: &[Estimator],
) -> Result<Vec<RiskEstimate>> {
    mc_risk_in_chunks(task, len, n, seed, model, estimators, CHUNK)
}

/// [`mc_risk`] with the model at every temperature of `taus` (attention logits divided by tau,
/// [`crate::tempered`]) on the same samples: one estimate per tau first (when a model is given),
/// then one per estimator. `taus = [1]` is [`mc_risk`], bit for bit.
pub fn mc_risk_tempered<T: Scalar>(
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    model: Option<(&Model<T>, &mut Runner<T>)>,
    taus: &[f64],
    estimators: &[Estimator],
) -> Result<Vec<RiskEstimate>> {
    risk_chunks(
        task,
        len,
        n,
        seed,
        Domain::Eval,
        model,
        taus,
        estimators,
        CHUNK,
    )
}

/// The temperature of `model` with the least risk on `n` held-out sequences of length `len` from
/// the streams (seed, [`Domain::Tune`], len, i), which no evaluation uses: returns (tau, held-out
/// risk), searched by [`crate::tempered::select_tau`]. The held-out batch is drawn once.
pub fn select_temperature<T: Scalar>(
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    model: &Model<T>,
    runner: &mut Runner<T>,
) -> Result<(f64, f64)> {
    check_mc(len, n)?;
    let no = task.n_out;
    let mut batch: Batch<T> = Batch::try_zeros(n, len, task.d, no)?;
    task.sample_into(
        seed,
        Domain::Tune,
        len as u64,
        0,
        &mut batch,
        &mut Vec::new(),
    );
    let (spec, circ) = (model.attention()?, model.circuits()?);
    let mut pred = vec![T::zero(); n * no];
    crate::tempered::select_tau(|tau| {
        runner.predict(spec, &circ.tempered(tau)?, &batch, &mut pred)?;
        let mut acc = Acc::default();
        for b in 0..n {
            let t = batch.target(b);
            acc.push(
                (0..no)
                    .map(|o| sq(pred[b * no + o].to_f64() - t[o].to_f64()))
                    .sum::<f64>()
                    / (no as f64),
            );
        }
        Ok(acc.finish().risk)
    })
}

fn check_mc(len: usize, n: usize) -> Result<()> {
    if n < 2 {
        return Err(Error::InvalidConfig(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    crate::budget::samples(n as u64, "samples")?;
    if len == 0 {
        return Err(Error::InvalidConfig("test length must be >= 1".into()));
    }
    Ok(())
}

/// [`mc_risk`] with at most `max_chunk` sequences in memory at a time (a microcontroller's heap);
/// the result does not depend on the chunk size.
pub fn mc_risk_in_chunks<T: Scalar>(
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    model: Option<(&Model<T>, &mut Runner<T>)>,
    estimators: &[Estimator],
    max_chunk: usize,
) -> Result<Vec<RiskEstimate>> {
    risk_chunks(
        task,
        len,
        n,
        seed,
        Domain::Eval,
        model,
        &[1.0],
        estimators,
        max_chunk,
    )
}

#[allow(clippy::too_many_arguments)]
fn risk_chunks<T: Scalar>(
    task: &Task,
    len: usize,
    n: usize,
    seed: u64,
    domain: Domain,
    model: Option<(&Model<T>, &mut Runner<T>)>,
    taus: &[f64],
    estimators: &[Estimator],
    max_chunk: usize,
) -> Result<Vec<RiskEstimate>> {
    check_mc(len, n)?;
    crate::tempered::check_taus(
        &taus
            .iter()
            .map(|&t| crate::tempered::Tau::Value(t))
            .collect::<Vec<_>>(),
    )?;
    for e in estimators {
        e.validate(task.d)?;
    }
    let n_model = if model.is_some() { taus.len() } else { 0 };
    let mut accs = vec![Acc::default(); estimators.len() + n_model];
    let no = task.n_out;
    let mut normals = Vec::new();
    let mut model = model;
    let circ: Option<Vec<_>> = match model.as_ref() {
        Some((m, _)) => {
            let c = m.circuits()?;
            Some(taus.iter().map(|&t| c.tempered(t)).collect::<Result<_>>()?)
        }
        None => None,
    };
    let mut est = vec![0.0; no];
    let mut first = 0;
    // sequences per chunk: up to max_chunk, fewer at long lengths (about 2^24 token values a chunk)
    let per_seq = (len.saturating_add(1)).saturating_mul(task.d + no).max(1);
    let chunk = (CHUNK_VALUES / per_seq).clamp(1, max_chunk.clamp(1, CHUNK));
    let mut pred = vec![T::zero(); chunk * no];
    while first < n {
        let m = chunk.min(n - first);
        let mut batch: Batch<T> = Batch::try_zeros(m, len, task.d, no)?;
        task.sample_into(
            seed,
            domain,
            len as u64,
            first as u64,
            &mut batch,
            &mut normals,
        );
        let mut k = 0;
        if let (Some((mdl, eng)), Some(cs)) = (model.as_mut(), circ.as_ref()) {
            for (i, c) in cs.iter().enumerate() {
                eng.predict(mdl.attention()?, c, &batch, &mut pred[..m * no])?;
                for b in 0..m {
                    let t = batch.target(b);
                    let se: f64 = (0..no)
                        .map(|o| sq(pred[b * no + o].to_f64() - t[o].to_f64()))
                        .sum::<f64>()
                        / (no as f64);
                    accs[i].push(se);
                }
            }
            k = cs.len();
        }
        for (j, e) in estimators.iter().enumerate() {
            for b in 0..m {
                e.predict(&batch, b, &mut est)?;
                let t = batch.target(b);
                let se: f64 =
                    (0..no).map(|o| sq(est[o] - t[o].to_f64())).sum::<f64>() / (no as f64);
                accs[k + j].push(se);
            }
        }
        first += m;
    }
    let out: Vec<RiskEstimate> = accs.iter().map(|a| a.finish()).collect();
    if let Some(bad) = out.iter().find(|r| !r.risk.is_finite()) {
        return Err(Error::Numerical(alloc::format!(
            "risk is not finite ({})",
            bad.risk
        )));
    }
    Ok(out)
}

#[inline]
fn sq(x: f64) -> f64 {
    x * x
}
