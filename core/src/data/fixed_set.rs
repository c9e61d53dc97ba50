//! Data of the Zhang et al. (2025) protocol (§2.1, App. A.3, App. G): a finite training set of P sequences from
//! the `eigs` task, with the reference code's finite-sample options, next-token-prediction
//! prefixes, and the in-context / in-weight test sets (App. G).
//!
//! Sequence mu of the training set comes from stream (seed, Train, 0, mu), so without centring,
//! whitening or a fixed-task mix it equals the online training batch of step 0.
use crate::config::Config;
use crate::data::{task::TaskVector, Batch, Task};
use crate::rng::Domain;
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, SymmetricEigen};

/// Which sequences a set holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// The training set: the first floor(c P) sequences draw w ~ N(0, I), the rest use w*
    /// (with pure-noise context labels when c = 0; reference code `--icl c`).
    Train,
    /// In-context test set: every sequence draws w ~ N(0, I).
    IclTest,
    /// In-weight test set: every sequence uses w* with pure-noise context labels.
    IwlTest,
}

/// Generate a set of `n` sequences of context length `len` (for next-token prediction, `len` =
/// N_max and every context label is kept, see [`prefix_batch`]).
///
/// Training sets use streams (seed, Train, 0, mu) and apply `task.centre` (x minus its mean over
/// the set at every position) and `task.whiten` (random task vectors shifted and rotated to mean
/// 0 and covariance exactly I, 1/P normalisation; only when `icl_fraction = 1`, as in the
/// reference code); labels are then recomputed as `y = w.x + (y_old - w_old.x_old)` (the noise
/// residual is kept). Test sets use streams (seed, Eval, len, mu) (ICL) and
/// (seed, Eval, len + 2^32, mu) (IWL) and are left raw.
pub fn generate(
    cfg: &Config,
    task: &Task,
    seed: u64,
    kind: SetKind,
    n: usize,
    len: usize,
) -> Result<Batch<f64>> {
    if n == 0 || len == 0 {
        return Err(Error::Shape(format!("empty set: n = {n}, len = {len}")));
    }
    let (d, no) = (task.d, task.n_out);
    let e = d + no;
    let c = cfg.task.icl_fraction;
    if kind == SetKind::IwlTest && task.w_star.len() != d {
        return Err(Error::InvalidConfig(
            "an in-weight test set needs the eigs task with task.icl_fraction < 1".into(),
        ));
    }
    let n_random = match kind {
        SetKind::Train if task.w_star.len() == d => libm::floor(c * n as f64) as usize,
        SetKind::Train | SetKind::IclTest => n,
        SetKind::IwlTest => 0,
    };
    let fixed_tv = if c == 0.0 || kind == SetKind::IwlTest {
        TaskVector::FixedNoiseContext
    } else {
        TaskVector::Fixed
    };
    let mut b = Batch::<f64>::zeros(n, len, d, no);
    let mut ws = vec![0.0; n * d];
    let mut normals = Vec::new();
    let w = (len + 1) * e;
    for mu in 0..n {
        let mut r = match kind {
            SetKind::Train => task.stream(seed, Domain::Train, 0, mu as u64),
            SetKind::IclTest => task.stream(seed, Domain::Eval, len as u64, mu as u64),
            SetKind::IwlTest => task.stream(seed, Domain::Eval, len as u64 + (1 << 32), mu as u64),
        };
        let tv = if mu < n_random {
            TaskVector::Random
        } else {
            fixed_tv
        };
        let (z, y) = (
            &mut b.z[mu * w..(mu + 1) * w],
            &mut b.y[mu * no..(mu + 1) * no],
        );
        task.sample_sequence_as(
            &mut r,
            len,
            &mut normals,
            z,
            y,
            tv,
            &mut ws[mu * d..(mu + 1) * d],
        );
    }
    if kind != SetKind::Train || !(cfg.task.centre || cfg.task.whiten) {
        return Ok(b);
    }
    if no != 1 {
        return Err(Error::Unsupported(
            "centring/whitening need one output".into(),
        ));
    }
    // Residuals r = y - w.x of every token (query target included), before any change.
    let dot = |w: &[f64], x: &[f64]| w.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
    let mut resid = vec![0.0; n * (len + 1)];
    for mu in 0..n {
        let wv = &ws[mu * d..(mu + 1) * d];
        for l in 0..=len {
            let tok = &b.z[mu * w + l * e..mu * w + (l + 1) * e];
            let y = if l < len { tok[d] } else { b.y[mu] };
            resid[mu * (len + 1) + l] = y - dot(wv, &tok[..d]);
        }
    }
    if cfg.task.centre {
        // x_{mu,l} <- x_{mu,l} - mean_mu x_{mu,l}, every position l
        for l in 0..=len {
            let mut mean = vec![0.0; d];
            for mu in 0..n {
                let tok = &b.z[mu * w + l * e..];
                mean.iter_mut()
                    .zip(tok)
                    .for_each(|(m, x)| *m += x / n as f64);
            }
            for mu in 0..n {
                let tok = &mut b.z[mu * w + l * e..mu * w + l * e + d];
                tok.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
            }
        }
    }
    if cfg.task.whiten && n_random == n {
        whiten(&mut ws, n, d)?;
    }
    for mu in 0..n {
        let noise_ctx = mu >= n_random && fixed_tv == TaskVector::FixedNoiseContext;
        let wv = ws[mu * d..(mu + 1) * d].to_vec();
        for l in 0..=len {
            let off = mu * w + l * e;
            let y = dot(&wv, &b.z[off..off + d]) + resid[mu * (len + 1) + l];
            if l == len {
                b.y[mu] = y;
            } else if !noise_ctx {
                b.z[off + d] = y;
            }
        }
    }
    Ok(b)
}

/// Whiten the rows of `w` (n x d): subtract the mean, then multiply by C^{-1/2} with
/// C = (1/n) sum (w - mean)(w - mean)^T, so that the empirical covariance is exactly I.
pub fn whiten(w: &mut [f64], n: usize, d: usize) -> Result<()> {
    if n <= d {
        return Err(Error::InvalidConfig(format!(
            "whitening {d}-dimensional task vectors needs more than {d} sequences, got {n}"
        )));
    }
    let mut mean = vec![0.0; d];
    for row in w.chunks_exact(d) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, x)| *m += x / n as f64);
    }
    for row in w.chunks_exact_mut(d) {
        row.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
    }
    let mut c = DMatrix::<f64>::zeros(d, d);
    for row in w.chunks_exact(d) {
        for i in 0..d {
            for j in 0..d {
                c[(i, j)] += row[i] * row[j] / n as f64;
            }
        }
    }
    let eig = SymmetricEigen::new(c);
    if eig.eigenvalues.iter().any(|&l| l.is_nan() || l <= 1e-300) {
        return Err(Error::Numerical(
            "task vectors are degenerate; cannot whiten".into(),
        ));
    }
    let mut inv_sqrt = DMatrix::<f64>::zeros(d, d);
    for k in 0..d {
        let s = 1.0 / libm::sqrt(eig.eigenvalues[k]);
        for i in 0..d {
            for j in 0..d {
                inv_sqrt[(i, j)] += s * eig.eigenvectors[(i, k)] * eig.eigenvectors[(j, k)];
            }
        }
    }
    let mut tmp = vec![0.0; d];
    for row in w.chunks_exact_mut(d) {
        for i in 0..d {
            tmp[i] = (0..d).map(|j| inv_sqrt[(i, j)] * row[j]).sum();
        }
        row.copy_from_slice(&tmp);
    }
    Ok(())
}

/// The prefix of next-token prediction with `c` context pairs (1 <= c <= full.len): tokens
/// 0..c-1 of every sequence, token c as the query (its y slot zeroed), its label as the target.
pub fn prefix_batch(full: &Batch<f64>, c: usize) -> Result<Batch<f64>> {
    if c == 0 || c > full.len {
        return Err(Error::Shape(format!(
            "prefix length {c} not in 1..={}",
            full.len
        )));
    }
    let (e, d, no) = (full.e(), full.d, full.n_out);
    let mut b = Batch::zeros(full.n, c, d, no);
    for mu in 0..full.n {
        let src = full.seq(mu);
        let dst = b.seq_mut(mu);
        dst.copy_from_slice(&src[..(c + 1) * e]);
        for o in 0..no {
            dst[c * e + d + o] = 0.0;
        }
        for o in 0..no {
            b.y[mu * no + o] = if c == full.len {
                full.y[mu * no + o]
            } else {
                src[c * e + d + o]
            };
        }
    }
    Ok(b)
}

/// Token-level next-token-prediction batches: one per context length c = 1..=full.len, with the
/// normaliser `l0(c)` (used by non-linear attention and as the reference for [`Moments::ntp`]).
pub fn prefix_batches(full: &Batch<f64>) -> Result<Vec<Batch<f64>>> {
    (1..=full.len).map(|c| prefix_batch(full, c)).collect()
}
