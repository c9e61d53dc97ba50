//! Monte Carlo risk at any test length L' (length generalisation), for models and estimators.
//!
//! Risk = E[(y_q - yhat_q)^2] averaged over outputs, including the query noise (He et al. 2025 App. F).
//! All estimators and the model at a given L' see the same samples (stream (seed, Eval, L', i)),
//! so their differences have small paired error.
use crate::engine::Runner;
use crate::estimator::Estimator;
use crate::model::Model;
use crate::rng::Domain;
use crate::task::{Batch, Task};
use crate::{Error, Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// A Monte Carlo risk and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskEstimate {
    pub risk: f64,
    pub stderr: f64,
    pub n: usize,
}

/// Running mean and variance of per-sequence squared errors.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    n: usize,
    sum: f64,
    sumsq: f64,
}

impl Acc {
    fn push(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        self.sumsq += v * v;
    }
    fn finish(&self) -> RiskEstimate {
        let n = self.n.max(1) as f64;
        let m = self.sum / n;
        let var = (self.sumsq / n - m * m).max(0.0) * n / (n - 1.0).max(1.0);
        RiskEstimate {
            risk: m,
            stderr: libm::sqrt(var / n),
            n: self.n,
        }
    }
}

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
    if n < 2 {
        return Err(Error::InvalidConfig(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    if len == 0 {
        return Err(Error::InvalidConfig("test length must be >= 1".into()));
    }
    for e in estimators {
        e.validate(task.d)?;
    }
    let has_model = model.is_some();
    let mut accs = vec![Acc::default(); estimators.len() + has_model as usize];
    let no = task.n_out;
    let mut normals = Vec::new();
    let mut model = model;
    let circ = model.as_ref().map(|(m, _)| m.circuits());
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
            Domain::Eval,
            len as u64,
            first as u64,
            &mut batch,
            &mut normals,
        );
        let mut k = 0;
        if let (Some((mdl, eng)), Some(c)) = (model.as_mut(), circ.as_ref()) {
            eng.predict(&mdl.spec, c, &batch, &mut pred[..m * no])?;
            for b in 0..m {
                let t = batch.target(b);
                let se: f64 = (0..no)
                    .map(|o| sq(pred[b * no + o].to_f64() - t[o].to_f64()))
                    .sum::<f64>()
                    / (no as f64);
                accs[0].push(se);
            }
            k = 1;
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
