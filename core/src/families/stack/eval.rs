//! Evaluation of multilayer-paper models on fresh sequences (streams (seed, Eval, L, i)), against
//! the **noise-free** target: the model (optionally its block stacked k times, or read after every
//! layer, Figs. 4a/4b), Algorithm 1 with the model's own step sizes, ridge (lambda = sigma^2), OLS,
//! T-step GD at eta = 1 and at the eta tuned on a grid (C.6), the alignment of Von Oswald et al.
//! (§4.7), and for IV models the two-stage TF, 2SLS, OLS and a one-stage "TF Ref" (§6.3).
use super::analysis::{pattern, readout_circuits};
use super::kernels::StackRunner;
use super::stack::{circuits_forward, Pass, StackCircuits, StackSpec};
use crate::config::ShiftConfig;
use crate::config::{Config, TaskKind};
use crate::data::iv::Iv;
use crate::data::{Batch, Task};
use crate::families::iv;
use crate::model::{Model, Net};
use crate::rng::{self, Domain};
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

fn stats(errs: &[f64]) -> (f64, f64) {
    let n = errs.len() as f64;
    let m = errs.iter().sum::<f64>() / n;
    let v = errs.iter().map(|e| (e - m) * (e - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, libm::sqrt(v / n))
}

fn push(rows: &mut Vec<Row>, name: &str, len: usize, errs: &[f64], eta: Option<f64>) {
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

fn set_eta_x(rows: &mut [Row], eta_x: f64) {
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
fn etas(sp: &StackSpec, c: &StackCircuits<f64>, layers: usize) -> Vec<(f64, f64)> {
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
    let (_, c64) =
        readout_circuits(model).ok_or_else(|| Error::Unsupported("not a transformer".into()))?;
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

fn check(o: &Options) -> Result<()> {
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
    if let Some((sp2, c2)) = readout_circuits(model) {
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
