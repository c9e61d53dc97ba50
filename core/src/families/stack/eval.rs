//! Evaluation of multilayer-paper models on fresh sequences (streams (seed, Eval, L, i)), against
//! the **noise-free** target: the model (optionally its block stacked k times, or read after every
//! layer, Figs. 4a/4b), Algorithm 1 with the model's own step sizes, ridge (lambda = sigma^2), OLS,
//! T-step GD at eta = 1 and at the eta tuned on a grid (C.6), the alignment of Von Oswald et al.
//! (§4.7). The IV model's evaluation builds on this one ([`crate::families::iv::eval`]).
use super::analysis::pattern;
use super::kernels::StackRunner;
use super::layers::{circuits_forward, Pass, StackCircuits, StackSpec};
use crate::config::ShiftConfig;
use crate::config::{Config, TaskKind};
use crate::data::{Batch, Task};
use crate::model::{Model, Net};
use crate::rng::Domain;
use crate::tempered::Tau;
use crate::theory::multilayer as ml;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// What to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub lens: Vec<usize>,
    pub samples: usize,
    pub seed: u64,
    /// Test eigenvalue range (C.7's out-of-distribution tests); `None`: the training range.
    pub lambda: Option<(f64, f64)>,
    /// Apply the trained block k times (k T layers; Fig. 4b, Obs. 4).
    pub stack: usize,
    /// Also report the readout after every layer (Fig. 4a): `model_t1`, `alg1_t1`, ...
    pub layers_out: bool,
    /// Sequences per length for the alignment metrics (0: none).
    pub alignment: usize,
}

/// Temperature and test-time shift of an evaluation (temperature paper; [`crate::tempered`],
/// [`crate::data::shift`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Temper {
    /// The temperatures the model is evaluated at (every layer's and head's logits divided by
    /// tau); `Opt` picks tau on `holdout` sequences of the tuning streams.
    pub taus: Vec<Tau>,
    /// The test-time shift of the data (all estimators see the shifted sequences).
    pub shift: ShiftConfig,
    /// Held-out sequences per length for `Opt`.
    pub holdout: usize,
}

impl Default for Temper {
    fn default() -> Self {
        Temper {
            taus: vec![Tau::Value(1.0)],
            shift: ShiftConfig::default(),
            holdout: DEFAULT_HOLDOUT,
        }
    }
}

/// Held-out sequences per length for the temperature `opt` (by default).
pub const DEFAULT_HOLDOUT: usize = 4096;

impl Temper {
    /// Whether this is the plain evaluation (tau = 1, no shift).
    pub fn is_plain(&self) -> bool {
        self.taus == [Tau::Value(1.0)] && self.shift.is_empty()
    }
    /// Check the temperatures, the shift keys and the held-out size.
    pub fn check(&self) -> Result<()> {
        crate::tempered::check_taus(&self.taus)?;
        self.shift.check()?;
        if self.taus.contains(&Tau::Opt) && self.holdout < 2 {
            return Err(Error::InvalidArgument(
                "the temperature opt needs at least 2 held-out sequences".into(),
            ));
        }
        crate::budget::samples(self.holdout as u64, "tau_holdout")
    }
}

/// One estimator at one length.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub estimator: String,
    pub len: usize,
    pub risk: f64,
    pub stderr: f64,
    /// The step size an estimator used, where it has one (GD, tuned GD; eta_y of Algorithm 1).
    pub eta: Option<f64>,
    /// Algorithm 1's eta_x, for the rows that tune it.
    pub eta_x: Option<f64>,
    /// The model's temperature (model rows only).
    pub tau: Option<f64>,
    /// Whether `tau` was chosen on held-out data (`opt`).
    pub tau_opt: bool,
}

/// Model Sim, Grad Diff and the prediction difference at one length (§4.7).
#[derive(Debug, Clone, PartialEq)]
pub struct Alignment {
    pub len: usize,
    pub samples: usize,
    /// Mean cos(d yhat_TF / d x_q, w_eff of Algorithm 1).
    pub model_sim: f64,
    /// Mean ||d yhat_TF / d x_q - w_eff||.
    pub grad_diff: f64,
    /// Mean |yhat_TF - yhat_Alg|.
    pub pred_diff: f64,
}

/// Everything an evaluation reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub rows: Vec<Row>,
    pub alignment: Vec<Alignment>,
    /// Algorithm 1's step sizes per layer (eta_x, eta_y) taken from the model.
    pub etas: Vec<(f64, f64)>,
}

pub(crate) fn stats(errs: &[f64]) -> (f64, f64) {
    let n = errs.len() as f64;
    let m = errs.iter().sum::<f64>() / n;
    let v = errs.iter().map(|e| (e - m) * (e - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, libm::sqrt(v / n))
}

pub(crate) fn push(rows: &mut Vec<Row>, name: &str, len: usize, errs: &[f64], eta: Option<f64>) {
    let (risk, stderr) = stats(errs);
    rows.push(Row {
        estimator: name.into(),
        len,
        risk,
        stderr,
        eta,
        eta_x: None,
        tau: None,
        tau_opt: false,
    });
}

pub(crate) fn set_eta_x(rows: &mut [Row], eta_x: f64) {
    if let Some(r) = rows.last_mut() {
        r.eta_x = Some(eta_x);
    }
}

fn push_model(rows: &mut Vec<Row>, name: &str, len: usize, errs: &[f64], tau: (f64, bool)) {
    push(rows, name, len, errs, None);
    if let Some(r) = rows.last_mut() {
        r.tau = Some(tau.0);
        r.tau_opt = tau.1;
    }
}

/// The regression sequences of one length, split into (x, y, xq) per sequence.
struct Seqs {
    d: usize,
    len: usize,
    batch: Batch<f64>,
}

impl Seqs {
    fn x(&self, b: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, f64) {
        let (d, l, e) = (self.d, self.len, self.d + 1);
        let z = self.batch.seq(b);
        let x = (0..l).flat_map(|t| z[t * e..t * e + d].to_vec()).collect();
        let y = (0..l).map(|t| z[t * e + d]).collect();
        (x, y, z[l * e..l * e + d].to_vec(), self.batch.y[b])
    }
}

/// The evaluation task of `cfg`: noise-free query, optionally another eigenvalue range.
fn eval_task(cfg: &Config, lambda: Option<(f64, f64)>) -> Result<Task> {
    let mut c = cfg.clone();
    c.task.query_noise = false;
    if let Some((lo, hi)) = lambda {
        if !(lo > 0.0 && lo <= hi && hi.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "the eigenvalue range needs 0 < min <= max (got {lo}, {hi})"
            )));
        }
        c.task.lambda_min = lo;
        c.task.lambda_max = hi;
    }
    Task::new(&c)
}

/// Step sizes (eta_x, eta_y) of every layer of the stack `sp` (cycled over `layers`).
pub(crate) fn etas(sp: &StackSpec, c: &StackCircuits<f64>, layers: usize) -> Vec<(f64, f64)> {
    let per: Vec<(f64, f64)> = (0..sp.sets())
        .map(|s| {
            let p = pattern(c, s, sp.e - sp.n_out);
            (p.eta_x(), p.eta_y())
        })
        .collect();
    (0..layers).map(|t| per[t % per.len()]).collect()
}

/// Evaluate a transformer on the regression task of its config.
pub fn regression<T: Scalar>(
    cfg: &Config,
    model: &Model<T>,
    runner: &mut StackRunner<T>,
    o: &Options,
) -> Result<Report> {
    regression_at(cfg, model, runner, o, &Temper::default())
}

/// The noise-free squared-error risk of the model at temperature `tau` on `batch`.
fn held_out_risk<T: Scalar>(
    sp: &StackSpec,
    c: &StackCircuits<T>,
    runner: &mut StackRunner<T>,
    pass: Pass,
    batch: &Batch<T>,
    tau: f64,
) -> Result<f64> {
    let mut out = vec![T::zero(); batch.n];
    runner.predict(sp, &c.tempered(tau)?, pass, batch, &mut out)?;
    Ok(out
        .iter()
        .zip(&batch.y)
        .map(|(a, y)| (a.to_f64() - y.to_f64()) * (a.to_f64() - y.to_f64()))
        .sum::<f64>()
        / batch.n as f64)
}

/// [`regression`] at the temperatures and under the shift of `temper`: one `model` row (and
/// `model_t*` rows) per temperature, `opt` chosen per length on held-out sequences of the tuning
/// streams (seed, Tune, L, i); the baselines once, on the same shifted sequences.
pub fn regression_at<T: Scalar>(
    cfg: &Config,
    model: &Model<T>,
    runner: &mut StackRunner<T>,
    o: &Options,
    temper: &Temper,
) -> Result<Report> {
    check(o)?;
    temper.check()?;
    let Net::Stack(sp) = &model.spec.net else {
        return Err(Error::Unsupported(
            "regression evaluation needs a transformer".into(),
        ));
    };
    if cfg.task.kind != TaskKind::Varying {
        return Err(Error::Unsupported(
            "regression evaluation needs task.kind = varying".into(),
        ));
    }
    let task = eval_task(cfg, o.lambda)?.shifted(&temper.shift)?;
    let (_, c64) = model
        .readout_stack()
        .ok_or_else(|| Error::Unsupported("not a transformer".into()))?;
    let mut c = StackCircuits::<T>::zeros(sp);
    circuits_forward(sp, &model.params, &mut c);
    let t_layers = sp.layers * o.stack.max(1);
    let etas = etas(sp, &c64, t_layers);
    let (d, s2) = (cfg.task.d, cfg.task.sigma2);
    let mut rep = Report {
        rows: Vec::new(),
        alignment: Vec::new(),
        etas: etas.clone(),
    };
    for &len in &o.lens {
        if len < 2 {
            return Err(Error::InvalidArgument(format!(
                "test length L = {len}: a transformer needs L >= 2"
            )));
        }
        let mut batch = Batch::<f64>::try_zeros(o.samples, len, d, 1)?;
        task.sample_into(
            o.seed,
            Domain::Eval,
            len as u64,
            0,
            &mut batch,
            &mut Vec::new(),
        );
        let seqs = Seqs { d, len, batch };
        let tb: Batch<T> = seqs.batch.cast();
        // the model, at its depth (or stacked), and after every layer
        let depths: Vec<usize> = if o.layers_out {
            (1..=t_layers).collect()
        } else {
            vec![t_layers]
        };
        let n = o.samples;
        let target: Vec<f64> = (0..n).map(|b| seqs.batch.y[b]).collect();
        let err = |p: &[T]| -> Vec<f64> {
            p.iter()
                .zip(&target)
                .map(|(a, y)| (a.to_f64() - y) * (a.to_f64() - y))
                .collect()
        };
        // the temperatures of this length (opt: on held-out sequences of the tuning streams)
        let mut taus = Vec::new();
        let mut holdout: Option<Batch<T>> = None;
        for t in &temper.taus {
            taus.push(match *t {
                Tau::Value(v) => (v, false),
                Tau::Opt => {
                    if holdout.is_none() {
                        let mut hb = Batch::<f64>::try_zeros(temper.holdout, len, d, 1)?;
                        task.sample_into(
                            o.seed,
                            Domain::Tune,
                            len as u64,
                            0,
                            &mut hb,
                            &mut Vec::new(),
                        );
                        holdout = Some(hb.cast());
                    }
                    let hb = holdout.as_ref().unwrap_or(&tb);
                    let pass = Pass {
                        layers: t_layers,
                        exclude_self: false,
                    };
                    let (tau, _) = crate::tempered::select_tau(|tau| {
                        held_out_risk(sp, &c, runner, pass, hb, tau)
                    })?;
                    (tau, true)
                }
            });
        }
        let mut first_preds = None;
        for &tau in &taus {
            let ct = c.tempered(tau.0)?;
            let mut preds = Vec::new();
            for &k in &depths {
                let mut out = vec![T::zero(); o.samples];
                runner.predict(
                    sp,
                    &ct,
                    Pass {
                        layers: k,
                        exclude_self: false,
                    },
                    &tb,
                    &mut out,
                )?;
                preds.push(out);
            }
            push_model(
                &mut rep.rows,
                "model",
                len,
                &err(&preds[preds.len() - 1]),
                tau,
            );
            if o.layers_out {
                for (k, p) in depths.iter().zip(&preds) {
                    push_model(&mut rep.rows, &format!("model_t{k}"), len, &err(p), tau);
                }
            }
            if first_preds.is_none() {
                first_preds = Some((ct, preds));
            }
        }
        let Some((c_first, preds)) = first_preds else {
            return Err(Error::InvalidArgument("no temperature given".into()));
        };
        // Algorithm 1, GD, ridge, OLS per sequence
        let mut alg = vec![vec![0.0; n]; t_layers];
        let gd_steps = sp.layers;
        let mut gd = vec![vec![0.0; n]; gd_steps];
        let (mut ridge, mut ols) = (vec![0.0; n], vec![0.0; n]);
        let mut w_eff = Vec::with_capacity(n);
        for b in 0..n {
            let (x, y, xq, yq) = seqs.x(b);
            let a = ml::algorithm1_schedule(&x, &y, &xq, &etas)?;
            for (t, p) in a.preds.iter().enumerate() {
                alg[t][b] = (p - yq) * (p - yq);
            }
            w_eff.push(a.w_eff);
            for (k, p) in ml::gd_steps(&x, &y, &xq, 1.0, gd_steps)?.iter().enumerate() {
                gd[k][b] = (p - yq) * (p - yq);
            }
            let dot = |w: &[f64]| w.iter().zip(&xq).map(|(a, b)| a * b).sum::<f64>();
            let r = dot(&ml::ridge(&x, &y, d, s2)?);
            ridge[b] = (r - yq) * (r - yq);
            if len > d {
                let w = ml::ols(&x, &y, d)?;
                ols[b] = (dot(&w) - yq) * (dot(&w) - yq);
            }
        }
        push(&mut rep.rows, "alg1", len, &alg[t_layers - 1], None);
        if o.layers_out {
            for (t, e) in alg.iter().enumerate() {
                push(&mut rep.rows, &format!("alg1_t{}", t + 1), len, e, None);
            }
        }
        push(&mut rep.rows, "ridge", len, &ridge, None);
        if len > d {
            push(&mut rep.rows, "ols", len, &ols, None);
        }
        for (k, e) in gd.iter().enumerate() {
            push(&mut rep.rows, &format!("gd{}", k + 1), len, e, Some(1.0));
        }
        // GD with T steps at the eta of the grid {0.1, ..., 5.0} that is best on a separate tuning set
        let eta = tuned_gd_eta(&task, o.seed, len, d, gd_steps, n.min(1000))?;
        let tuned: Vec<f64> = (0..n)
            .map(|b| {
                let (x, y, xq, yq) = seqs.x(b);
                ml::gd_steps(&x, &y, &xq, eta, gd_steps)
                    .map(|p| (p[gd_steps - 1] - yq) * (p[gd_steps - 1] - yq))
            })
            .collect::<Result<_>>()?;
        push(
            &mut rep.rows,
            &format!("gd{gd_steps}_tuned"),
            len,
            &tuned,
            Some(eta),
        );
        if o.alignment > 0 {
            rep.alignment.push(alignment(
                sp,
                &c_first,
                runner,
                &tb,
                &preds[preds.len() - 1],
                &seqs,
                &w_eff,
                &etas,
                o.alignment.min(n),
                t_layers,
            )?);
        }
    }
    Ok(rep)
}

/// The eta of the grid {0.1, 0.2, ..., 5.0} minimising the `steps`-step GD error on `n` tuning
/// sequences (streams (seed ^ TUNE, Eval, L, i), disjoint from the evaluation's).
pub fn tuned_gd_eta(
    task: &Task,
    seed: u64,
    len: usize,
    d: usize,
    steps: usize,
    n: usize,
) -> Result<f64> {
    let mut b = Batch::<f64>::try_zeros(n.max(2), len, d, 1)?;
    task.sample_into(
        seed ^ 0x7475_6e65,
        Domain::Eval,
        len as u64,
        0,
        &mut b,
        &mut Vec::new(),
    );
    let seqs = Seqs { d, len, batch: b };
    let mut best = (f64::INFINITY, 0.1);
    for k in 1..=50 {
        let eta = k as f64 / 10.0;
        let mut e = 0.0;
        for s in 0..seqs.batch.n {
            let (x, y, xq, yq) = seqs.x(s);
            let p = ml::gd_steps(&x, &y, &xq, eta, steps)?[steps - 1];
            e += (p - yq) * (p - yq);
        }
        if e < best.0 {
            best = (e, eta);
        }
    }
    Ok(best.1)
}

/// §4.7: g_TF = d yhat / d x_q by central differences (h = 1e-3 on the query's x-slots) against
/// g_Alg = w_eff, on the first `m` sequences.
#[allow(clippy::too_many_arguments)]
fn alignment<T: Scalar>(
    sp: &StackSpec,
    c: &StackCircuits<T>,
    runner: &mut StackRunner<T>,
    tb: &Batch<T>,
    preds: &[T],
    seqs: &Seqs,
    w_eff: &[Vec<f64>],
    etas: &[(f64, f64)],
    m: usize,
    layers: usize,
) -> Result<Alignment> {
    let (d, len, e) = (seqs.d, seqs.len, seqs.d + 1);
    let w = (len + 1) * e;
    let mut sub = Batch::<T>::try_zeros(m, len, d, 1)?;
    sub.z.copy_from_slice(&tb.z[..m * w]);
    sub.y.copy_from_slice(&tb.y[..m]);
    let h = 1e-3;
    let mut g = vec![vec![0.0; d]; m];
    let pass = Pass {
        layers,
        exclude_self: false,
    };
    for i in 0..d {
        let mut f = [vec![T::zero(); m], vec![T::zero(); m]];
        for (k, sgn) in [1.0, -1.0].iter().enumerate() {
            let mut pb = sub.clone();
            for b in 0..m {
                let q = b * w + len * e + i;
                pb.z[q] = T::of(sub.z[q].to_f64() + sgn * h);
            }
            runner.predict(sp, c, pass, &pb, &mut f[k])?;
        }
        for b in 0..m {
            g[b][i] = (f[0][b].to_f64() - f[1][b].to_f64()) / (2.0 * h);
        }
    }
    let (mut sim, mut diff, mut pd) = (0.0, 0.0, 0.0);
    for b in 0..m {
        let (x, y, xq, _) = seqs.x(b);
        let a = ml::algorithm1_schedule(&x, &y, &xq, etas)?;
        let wa = &w_eff[b];
        let dot: f64 = g[b].iter().zip(wa).map(|(p, q)| p * q).sum();
        let n1 = libm::sqrt(g[b].iter().map(|p| p * p).sum::<f64>());
        let n2 = libm::sqrt(wa.iter().map(|p| p * p).sum::<f64>());
        sim += dot / (n1 * n2).max(1e-300);
        diff += libm::sqrt(
            g[b].iter()
                .zip(wa)
                .map(|(p, q)| (p - q) * (p - q))
                .sum::<f64>(),
        );
        pd += (preds[b].to_f64() - a.preds[a.preds.len() - 1]).abs();
    }
    let mf = m as f64;
    Ok(Alignment {
        len,
        samples: m,
        model_sim: sim / mf,
        grad_diff: diff / mf,
        pred_diff: pd / mf,
    })
}

pub(crate) fn check(o: &Options) -> Result<()> {
    if o.samples < 2 {
        return Err(Error::InvalidArgument(
            "Monte Carlo needs at least 2 samples".into(),
        ));
    }
    crate::budget::samples(o.samples as u64, "samples")?;
    crate::budget::samples(o.alignment as u64, "alignment")?;
    if o.lens.is_empty() {
        return Err(Error::InvalidArgument("no test lengths given".into()));
    }
    if o.stack == 0 {
        return Err(Error::InvalidArgument("--stack needs k >= 1".into()));
    }
    Ok(())
}
