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
    let ivd = Iv {
        q: cfg.task.iv_q,
        p: cfg.task.d,
    };
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
        let seqs: Vec<ml::IvSequence> = (0..n)
            .map(|b| {
                ivd.draw(
                    &mut rng::stream(o.seed, Domain::Eval, len as u64, b as u64),
                    len,
                )
            })
            .collect();
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
        let (mut tsls, mut ols) = (Vec::new(), Vec::new());
        for s in &seqs {
            if len > ivd.q {
                let (beta, theta) = ml::two_sls(&s.z, &s.x, &s.y, ivd.q, ivd.p)?;
                // prediction beta^T theta_hat^T z_q
                let pred: f64 = (0..ivd.p)
                    .map(|j| {
                        beta[j]
                            * (0..ivd.q)
                                .map(|i| theta[i * ivd.p + j] * s.zq[i])
                                .sum::<f64>()
                    })
                    .sum();
                tsls.push((pred - s.yq).powi2());
            }
            if len > ivd.p {
                let b = ml::ols(&s.x, &s.y, ivd.p)?;
                let pred: f64 = b.iter().zip(&s.xq).map(|(a, x)| a * x).sum();
                ols.push((pred - s.yq).powi2());
            }
        }
        if !tsls.is_empty() {
            push(&mut rep.rows, "2sls", len, &tsls, None);
        }
        // The interpreted algorithm's ceiling: Algorithm 1 on the ideal stage-1 fit (two-stage) and
        // on (x, y) (one stage), step sizes grid-tuned on these very sequences.
        let (t2, t_ref) = match &main {
            IvModel::TwoStage(spec) => (spec.st2.layers, spec.st2.layers + spec.st1.layers),
            IvModel::OneStage(sp) => (sp.layers.saturating_sub(1).max(1), sp.layers),
        };
        let (mut two, mut one) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for s in &seqs {
            let (xh, xhq) = ml::iv_ideal_stage1(s, ivd.q, ivd.p);
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
        let (e, ex, ey) = tune_alg1(&two, t2, runner)?;
        push(&mut rep.rows, "alg1_ideal_2stage", len, &e, Some(ey));
        set_eta_x(&mut rep.rows, ex);
        let (e, ex, ey) = tune_alg1(&one, t_ref, runner)?;
        push(&mut rep.rows, "alg1_1stage", len, &e, Some(ey));
        set_eta_x(&mut rep.rows, ex);
        if !ols.is_empty() {
            push(&mut rep.rows, "ols", len, &ols, None);
        }
        if let (Some(r), Some(sp)) = (&reference, &ref_spec) {
            let e = one_stage_errors(&ivd, sp, &r.model.params, &seqs, len, runner)?;
            push(&mut rep.rows, "tf_ref", len, &e, None);
        }
    }
    Ok(rep)
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
