//! Evaluation of IV models on fresh sequences (§6.3): the two-stage TF (or a one-stage
//! transformer on `[x; y]`), 2SLS, OLS, Algorithm 1 tuned in-sample, and a one-stage "TF Ref".
use crate::config::{Config, TaskKind};
use crate::data::iv::Iv;
use crate::data::Batch;
use crate::families::iv;
use crate::families::stack::eval::{check, etas, push, set_eta_x, Options, Report};
use crate::families::stack::kernels::StackRunner;
use crate::families::stack::layers::{circuits_forward, Pass, StackCircuits, StackSpec};
use crate::model::{Model, Net};
use crate::rng::{self, Domain};
use crate::theory::multilayer as ml;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// A one-stage model evaluated on the IV sequences (the "TF Ref" of §6.3).
pub struct Reference<'a, T: Scalar> {
    pub model: &'a Model<T>,
}

/// Evaluate a model of the IV task against 2SLS and OLS: the two-stage model, or a one-stage
/// transformer on `[x; y]` (a "TF Ref" run on its own), plus an optional one-stage reference.
pub fn iv<T: Scalar>(
    cfg: &Config,
    model: &Model<T>,
    reference: Option<Reference<'_, T>>,
    runner: &mut StackRunner<T>,
    o: &Options,
) -> Result<Report> {
    check(o)?;
    if cfg.task.kind != TaskKind::Iv {
        return Err(Error::Unsupported(
            "IV evaluation needs task.kind = iv".into(),
        ));
    }
    let ivd = Iv::of_task(&cfg.task);
    let one_stage = |m: &Model<T>, what: &str| -> Result<StackSpec> {
        match &m.spec.net {
            Net::Stack(s) if s.e == ivd.p + 1 && s.n_out == 1 => Ok(s.clone()),
            _ => Err(Error::InvalidArgument(format!(
                "{what} must be a one-stage transformer on [x; y] with p = {} (d mismatch)",
                ivd.p
            ))),
        }
    };
    let main = match &model.spec.net {
        Net::Iv(spec) => IvModel::TwoStage(spec),
        _ => IvModel::OneStage(one_stage(model, "the model")?),
    };
    let ref_spec = match &reference {
        Some(r) => Some(one_stage(r.model, "the reference")?),
        None => None,
    };
    let mut rep = Report {
        rows: Vec::new(),
        alignment: Vec::new(),
        etas: Vec::new(),
    };
    if let Some((sp2, c2)) = model.readout_stack() {
        rep.etas = etas(&sp2, &c2, sp2.layers);
    }
    for &len in &o.lens {
        if len < 2 {
            return Err(Error::InvalidArgument(format!(
                "test length L = {len}: a transformer needs L >= 2"
            )));
        }
        let n = o.samples;
        let seqs = sequences(&ivd, len, n, o.seed);
        let e = match &main {
            IvModel::TwoStage(spec) => {
                let mut ivb = iv::empty_batch::<T>(spec, n, len)?;
                let w1 = (len + 1) * (ivd.q + ivd.p);
                for (b, s) in seqs.iter().enumerate() {
                    ivd.stage1(
                        s,
                        len,
                        &mut ivb.st1.z[b * w1..(b + 1) * w1],
                        &mut ivb.st1.y[b * ivd.p..(b + 1) * ivd.p],
                    );
                    for l in 0..len {
                        ivb.y[b * len + l] = T::of(s.y[l]);
                    }
                    ivb.yq[b] = T::of(s.yq);
                }
                let p = iv::predict(spec, &model.params, &ivb, runner)?;
                p.iter()
                    .zip(&seqs)
                    .map(|(a, s)| (a.to_f64() - s.yq).powi2())
                    .collect()
            }
            IvModel::OneStage(sp) => one_stage_errors(&ivd, sp, &model.params, &seqs, len, runner)?,
        };
        push(&mut rep.rows, "model", len, &e, None);
        // the interpreted algorithm's ceilings: the stage-2 depth on the ideal stage-1 fit
        // (two-stage), the whole depth on (x, y) (one stage)
        let (t2, t_ref) = match &main {
            IvModel::TwoStage(spec) => (spec.st2.layers, spec.st2.layers + spec.st1.layers),
            IvModel::OneStage(sp) => (sp.layers.saturating_sub(1).max(1), sp.layers),
        };
        for b in baselines(&ivd, &seqs, len, t2, t_ref, runner)? {
            push(&mut rep.rows, b.name, len, &b.errors, b.etas.map(|e| e.1));
            if let Some((ex, _)) = b.etas {
                set_eta_x(&mut rep.rows, ex);
            }
        }
        if let (Some(r), Some(sp)) = (&reference, &ref_spec) {
            let e = one_stage_errors(&ivd, sp, &r.model.params, &seqs, len, runner)?;
            push(&mut rep.rows, "tf_ref", len, &e, None);
        }
    }
    Ok(rep)
}

/// `n` IV sequences of length `len` from the evaluation streams (seed, Eval, len, b), b = 0..n:
/// the sequences every estimator of [`iv`] sees.
pub fn sequences(ivd: &Iv, len: usize, n: usize, seed: u64) -> Vec<ml::IvSequence> {
    (0..n)
        .map(|b| {
            ivd.draw(
                &mut rng::stream_in(ivd.data_law, seed, Domain::Eval, len as u64, b as u64),
                len,
            )
        })
        .collect()
}

/// One estimator's squared errors at the query, sequence by sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Its row name in an evaluation (`2sls`, `2sls_xq`, `alg1_ideal_2stage`, `alg1_1stage`, `ols`).
    pub name: &'static str,
    pub errors: Vec<f64>,
    /// The step sizes (eta_x, eta_y) Algorithm 1 was tuned to, for its rows.
    pub etas: Option<(f64, f64)>,
}

/// The estimators beside an IV model (§6.3), each on every sequence of `seqs` (length `len`),
/// against the sequence's `y_q`:
/// * `2sls`: beta_2sls^T theta_hat^T z_q (the information the transformer has), when L > q;
/// * `2sls_xq`: beta_2sls^T x_q, 2SLS evaluated at x_q as Liang et al.'s code does, when L > q;
/// * `alg1_ideal_2stage`: Algorithm 1 with `t2` steps on the ideal leave-one-out stage-1 fit
///   ([`ml::iv_ideal_stage1`]), and `alg1_1stage`: with `t_ref` steps on (x, y), each with
///   (eta_x, eta_y) tuned on these sequences (an optimistic ceiling);
/// * `ols`: beta_ols^T x_q, when L > p.
///
/// The rows a length too short for leaves out are absent.
pub fn baselines<T: Scalar>(
    ivd: &Iv,
    seqs: &[ml::IvSequence],
    len: usize,
    t2: usize,
    t_ref: usize,
    runner: &mut StackRunner<T>,
) -> Result<Vec<Baseline>> {
    let (q, p) = (ivd.q, ivd.p);
    let n = seqs.len();
    let (mut tsls, mut tsls_xq, mut ols) = (Vec::new(), Vec::new(), Vec::new());
    for s in seqs {
        if len > q {
            let (beta, theta) = ml::two_sls(&s.z, &s.x, &s.y, q, p)?;
            // beta^T theta_hat^T z_q and beta^T x_q
            let xhat_q: Vec<f64> = (0..p)
                .map(|j| (0..q).map(|i| theta[i * p + j] * s.zq[i]).sum::<f64>())
                .collect();
            let at = |v: &[f64]| beta.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
            tsls.push((at(&xhat_q) - s.yq).powi2());
            tsls_xq.push((at(&s.xq) - s.yq).powi2());
        }
        if len > p {
            let b = ml::ols(&s.x, &s.y, p)?;
            let pred: f64 = b.iter().zip(&s.xq).map(|(a, x)| a * x).sum();
            ols.push((pred - s.yq).powi2());
        }
    }
    let (mut two, mut one) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for s in seqs {
        let (xh, xhq) = ml::iv_ideal_stage1(s, q, p);
        let (c, b) = ml::alg1_moments(&xh, &s.y, &xhq)?;
        two.push(Moments {
            c,
            b,
            xq: xhq,
            yq: s.yq,
        });
        let (c, b) = ml::alg1_moments(&s.x, &s.y, &s.xq)?;
        one.push(Moments {
            c,
            b,
            xq: s.xq.clone(),
            yq: s.yq,
        });
    }
    let mut out = Vec::with_capacity(5);
    if !tsls.is_empty() {
        out.push(Baseline {
            name: "2sls",
            errors: tsls,
            etas: None,
        });
        out.push(Baseline {
            name: "2sls_xq",
            errors: tsls_xq,
            etas: None,
        });
    }
    let (e, ex, ey) = tune_alg1(&two, t2, runner)?;
    out.push(Baseline {
        name: "alg1_ideal_2stage",
        errors: e,
        etas: Some((ex, ey)),
    });
    let (e, ex, ey) = tune_alg1(&one, t_ref, runner)?;
    out.push(Baseline {
        name: "alg1_1stage",
        errors: e,
        etas: Some((ex, ey)),
    });
    if !ols.is_empty() {
        out.push(Baseline {
            name: "ols",
            errors: ols,
            etas: None,
        });
    }
    Ok(out)
}

/// One sequence's Algorithm-1 moments, query and noise-free target.
struct Moments {
    c: nalgebra::DMatrix<f64>,
    b: nalgebra::DVector<f64>,
    xq: Vec<f64>,
    yq: f64,
}

/// Algorithm 1 with `steps` steps and one (eta_x, eta_y) for all sequences, chosen on the grid
/// eta_x in u*{0, 0.1, ..., 2}, eta_y in u*{0.1, 0.2, ..., 4} with u = 1 / mean tr C_0 (the
/// natural step scale), minimising the mean squared error over these same sequences: an in-sample
/// (optimistic) ceiling of what the interpreted algorithm can do. Returns the errors and the step
/// sizes.
fn tune_alg1<T: Scalar>(
    seqs: &[Moments],
    steps: usize,
    runner: &mut StackRunner<T>,
) -> Result<(Vec<f64>, f64, f64)> {
    let n = seqs.len().max(1) as f64;
    let tr = seqs.iter().map(|m| m.c.trace()).sum::<f64>() / n;
    let u = if tr > 0.0 && tr.is_finite() {
        1.0 / tr
    } else {
        1.0
    };
    let errs = |ex: f64, ey: f64| -> Vec<f64> {
        let etas = vec![(ex, ey); steps];
        seqs.iter()
            .map(|m| {
                let a = ml::algorithm1_moments(&m.c, &m.b, &m.xq, &etas);
                let p = a.preds.last().copied().unwrap_or(0.0);
                (p - m.yq) * (p - m.yq)
            })
            .collect()
    };
    // the grid's summed squared errors, then the first smallest: every sequence's grid of
    // predictions (`algorithm1_grid` forms each eta_x's A_t, C_t once) filled by the engine
    // (in parallel, GRID_BLOCK sequences at a time), summed in sequence order
    let exs: Vec<f64> = (0..=20).map(|i| u * i as f64 / 10.0).collect();
    let eys: Vec<f64> = (1..=40).map(|j| u * j as f64 / 10.0).collect();
    let g = exs.len() * eys.len();
    let mut sums = vec![0.0; g];
    let mut preds = vec![0.0; GRID_BLOCK.min(seqs.len()) * g];
    for block in seqs.chunks(GRID_BLOCK) {
        let preds = &mut preds[..block.len() * g];
        runner.fill_rows_f64(block.len(), &mut [&mut preds[..]], &|b, rows, _| {
            let m = &block[b];
            ml::algorithm1_grid(&m.c, &m.b, &m.xq, steps, &exs, &eys, &mut rows[0][..]);
        })?;
        for (m, ps) in block.iter().zip(preds.chunks_exact(g)) {
            for (s, p) in sums.iter_mut().zip(ps) {
                *s += (p - m.yq) * (p - m.yq);
            }
        }
    }
    let mut best = (f64::INFINITY, 0.0, u);
    for (i, &ex) in exs.iter().enumerate() {
        for (j, &ey) in eys.iter().enumerate() {
            let m = sums[i * eys.len() + j];
            if m < best.0 {
                best = (m, ex, ey);
            }
        }
    }
    Ok((errs(best.1, best.2), best.1, best.2))
}

/// Sequences per block of [`tune_alg1`]'s grid (the predictions of a block are held at once:
/// 840 values a sequence).
const GRID_BLOCK: usize = 512;

/// The model under IV evaluation.
enum IvModel<'a> {
    TwoStage(&'a iv::IvSpec),
    OneStage(StackSpec),
}

/// Squared errors of a one-stage transformer on `[x_l; y_l]` with query `[x_q; 0]`.
fn one_stage_errors<T: Scalar>(
    ivd: &Iv,
    sp: &StackSpec,
    params: &[T],
    seqs: &[ml::IvSequence],
    len: usize,
    runner: &mut StackRunner<T>,
) -> Result<Vec<f64>> {
    let n = seqs.len();
    let mut b1 = Batch::<T>::try_zeros(n, len, ivd.p, 1)?;
    let w = (len + 1) * (ivd.p + 1);
    for (b, s) in seqs.iter().enumerate() {
        ivd.one_stage(s, len, &mut b1.z[b * w..(b + 1) * w], &mut b1.y[b..b + 1]);
    }
    let mut c = StackCircuits::<T>::zeros(sp);
    circuits_forward(sp, params, &mut c);
    let mut out = vec![T::zero(); n];
    runner.predict(sp, &c, Pass::of(sp), &b1, &mut out)?;
    Ok(out
        .iter()
        .zip(seqs)
        .map(|(a, s)| (a.to_f64() - s.yq).powi2())
        .collect())
}

trait Sq {
    fn powi2(self) -> f64;
}
impl Sq for f64 {
    fn powi2(self) -> f64 {
        self * self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IvQuery;
    use crate::data::iv::IvLaw;

    /// Solve the symmetric positive definite system `a x = b` (k x k, row-major) by Gaussian
    /// elimination with partial pivoting: the test's own least squares, independent of nalgebra.
    fn solve(mut a: Vec<f64>, mut b: Vec<f64>, k: usize) -> Vec<f64> {
        for c in 0..k {
            let piv = (c..k)
                .max_by(|&i, &j| a[i * k + c].abs().total_cmp(&a[j * k + c].abs()))
                .unwrap();
            for j in 0..k {
                a.swap(c * k + j, piv * k + j);
            }
            b.swap(c, piv);
            for r in c + 1..k {
                let f = a[r * k + c] / a[c * k + c];
                for j in c..k {
                    a[r * k + j] -= f * a[c * k + j];
                }
                b[r] -= f * b[c];
            }
        }
        let mut x = vec![0.0; k];
        for c in (0..k).rev() {
            let s: f64 = (c + 1..k).map(|j| a[c * k + j] * x[j]).sum();
            x[c] = (b[c] - s) / a[c * k + c];
        }
        x
    }

    /// Least squares of the columns of `m` (n x k) on `v` (n): (M^T M)^{-1} M^T v.
    fn lstsq(m: &[f64], v: &[f64], n: usize, k: usize) -> Vec<f64> {
        let mut g = vec![0.0; k * k];
        let mut r = vec![0.0; k];
        for t in 0..n {
            for i in 0..k {
                r[i] += m[t * k + i] * v[t];
                for j in 0..k {
                    g[i * k + j] += m[t * k + i] * m[t * k + j];
                }
            }
        }
        solve(g, r, k)
    }

    /// `2sls_xq` is beta_2sls^T x_q and `2sls` beta_2sls^T theta_hat^T z_q, with 2SLS written out
    /// here: theta_hat column by column from z, X_hat = Z theta_hat, beta from (X_hat, y); under
    /// both queries.
    #[test]
    fn iv_2sls_xq_is_2sls_evaluated_at_x_q() {
        let (q, p, len) = (6, 4, 60);
        for query in [IvQuery::Paper, IvQuery::Liang] {
            let ivd = Iv {
                law: IvLaw {
                    query,
                    ..IvLaw::default()
                },
                ..Iv::new(q, p)
            };
            let seqs = sequences(&ivd, len, 8, 3);
            let mut runner = StackRunner::<f64>::scalar();
            let rows = baselines(&ivd, &seqs, len, 3, 4, &mut runner).unwrap();
            let names: Vec<&str> = rows.iter().map(|b| b.name).collect();
            assert_eq!(
                names,
                ["2sls", "2sls_xq", "alg1_ideal_2stage", "alg1_1stage", "ols"]
            );
            for (k, s) in seqs.iter().enumerate() {
                // first stage: theta_hat's column j regresses x_j on z
                let mut theta = vec![0.0; q * p];
                for j in 0..p {
                    let xj: Vec<f64> = (0..len).map(|t| s.x[t * p + j]).collect();
                    for (i, v) in lstsq(&s.z, &xj, len, q).into_iter().enumerate() {
                        theta[i * p + j] = v;
                    }
                }
                let xh: Vec<f64> = (0..len * p)
                    .map(|e| {
                        let (t, j) = (e / p, e % p);
                        (0..q).map(|i| s.z[t * q + i] * theta[i * p + j]).sum()
                    })
                    .collect();
                let beta = lstsq(&xh, &s.y, len, p);
                let at = |v: &[f64]| (0..p).map(|j| beta[j] * v[j]).sum::<f64>();
                let xhat_q: Vec<f64> = (0..p)
                    .map(|j| (0..q).map(|i| theta[i * p + j] * s.zq[i]).sum())
                    .collect();
                let want_xq = (at(&s.xq) - s.yq).powi(2);
                let want = (at(&xhat_q) - s.yq).powi(2);
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-8 * (1.0 + b.abs());
                assert!(
                    close(rows[1].errors[k], want_xq),
                    "{query:?} seq {k}: {} vs {want_xq}",
                    rows[1].errors[k]
                );
                assert!(
                    close(rows[0].errors[k], want),
                    "{query:?} seq {k}: {} vs {want}",
                    rows[0].errors[k]
                );
                // and OLS at x_q
                let b = lstsq(&s.x, &s.y, len, p);
                let want = ((0..p).map(|j| b[j] * s.xq[j]).sum::<f64>() - s.yq).powi(2);
                assert!(close(rows[4].errors[k], want));
            }
        }
    }
}
