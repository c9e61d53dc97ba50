//! What the firmware example (`examples/firmware`) computes on a microcontroller, and `icl
//! embedded` on the host, with the same code: so the two can be compared bit for bit.
//!
//! 1. [`train`]: the one trainer ([`crate::train::Trainer`]) with the scalar reference engine, fresh
//!    data from the core's sampler, the config's optimiser; the log's loss trajectory, each head's
//!    omega and mu at the end, and the Monte Carlo risk at the training length on the evaluation
//!    streams, computed a few sequences at a time.
//! 2. [`predict`]: a checkpoint written by `icl train` ([`crate::checkpoint`]) predicts the first
//!    `n` sequences of the evaluation stream at its training length (the sequences
//!    [`crate::families::attention::eval::mc_risk`] starts with).
//!
//! The full model ([`config`]) and the reduced (omega, mu) model ([`config_reduced`]) are trained.
//! [`json`] prints everything as one JSON line with keys `"preset"`, `"steps"`, `"omega"`, `"mu"`,
//! `"loss"` ([[step, loss], ...]), `"risk"` (the full model), `"reduced"` (the same keys for the
//! reduced model), `"checkpoint_step"`, `"predictions"`, `"targets"`.
//! Every number is written with Rust's shortest round-trip formatting, so equal text means equal
//! bits.
use crate::config::Config;
use crate::data::{Batch, Task};
use crate::engine::{Runner, ScalarEngine};
use crate::families::attention::analysis::analyze;
use crate::families::attention::eval::mc_risk_in_chunks;
use crate::model::Model;
use crate::rng::Domain;
use crate::train::{Options, Trainer};
use crate::{Result, Scalar};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

/// The name of [`config`] (the JSON line's `"preset"`).
pub const NAME: &str = "he2025-mcu";
/// The name of [`config_reduced`].
pub const NAME_REDUCED: &str = "he2025-mcu-reduced";

/// What the firmware trains: `he2025` (H = 2 full softmax attention, d = 5, sigma^2 = 0.1, Adam)
/// sized for a microcontroller: L = 20, batch 8, 200 steps, lr 1e-2, a log row every 20 steps.
pub fn config() -> Result<Config> {
    sized("he2025")
}

/// The reduced (omega, mu) model (`he2025-reduced`: small symmetric init) at the sizes of
/// [`config`].
pub fn config_reduced() -> Result<Config> {
    sized("he2025-reduced")
}

fn sized(preset: &str) -> Result<Config> {
    let mut cfg = crate::presets::preset(preset)?;
    for (k, v) in [
        ("task.L", "20"),
        ("train.batch", "8"),
        ("train.steps", "200"),
        ("train.lr", "1e-2"),
        ("train.log_every", "20"),
    ] {
        cfg.set(k, v)?;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Monte Carlo samples of the risk after training.
pub const RISK_SAMPLES: usize = 256;
/// Sequences in memory at a time while estimating the risk.
pub const RISK_CHUNK: usize = 16;
/// Sequences the checkpoint predicts.
pub const PREDICTIONS: usize = 8;

/// The result of [`train`].
#[derive(Debug, Clone, PartialEq)]
pub struct TrainReport {
    /// Steps trained.
    pub steps: u64,
    /// The trainer's log: (step, mean training loss since the previous row).
    pub loss: Vec<(u64, f64)>,
    /// Each head's omega and mu after training ([`crate::families::attention::analysis::analyze`]).
    pub omega: Vec<f64>,
    pub mu: Vec<f64>,
    /// Monte Carlo risk at the training length ([`RISK_SAMPLES`] sequences of the evaluation
    /// streams) and its standard error.
    pub risk: f64,
    pub risk_stderr: f64,
}

/// Train `cfg` in precision `T` with the scalar engine; `step_done(step)` is called after every
/// step (the firmware reads its cycle counter there).
pub fn train<T: Scalar>(
    cfg: &Config,
    risk_samples: usize,
    step_done: &mut dyn FnMut(u64),
) -> Result<TrainReport> {
    let model = Model::<T>::init(cfg)?;
    let mut tr = Trainer::with_model(cfg, model, &ScalarEngine, &Options::default())?;
    tr.run(&mut |s, _| {
        step_done(s);
        true
    })?;
    let rep = analyze(tr.model.attention()?, &tr.model.circuits()?);
    let mut runner = Runner::<T>::scalar();
    let r = mc_risk_in_chunks(
        &tr.task,
        cfg.task.len,
        risk_samples,
        cfg.train.seed,
        Some((&tr.model, &mut runner)),
        &[],
        RISK_CHUNK,
    )?[0];
    Ok(TrainReport {
        steps: tr.step,
        loss: tr.log.iter().map(|r| (r.step, r.loss)).collect(),
        omega: rep.heads.iter().map(|h| h.omega).collect(),
        mu: rep.heads.iter().map(|h| h.mu).collect(),
        risk: r.risk,
        risk_stderr: r.stderr,
    })
}

/// The result of [`predict`].
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions<T> {
    /// The checkpoint's step.
    pub step: u64,
    /// Context length of the sequences (the checkpoint's training length).
    pub len: usize,
    /// n x n_out predictions and the sequences' (noisy) targets.
    pub predictions: Vec<T>,
    pub targets: Vec<T>,
}

/// Predictions of a trained model (`step` steps of `cfg`), in precision `T`, for the first `n`
/// sequences of the evaluation stream (seed `train.seed`, length `task.L`), computed `chunk`
/// sequences at a time.
///
/// One-layer attention models only (every parametrisation, softmax or linear): a multi-layer
/// transformer or the IV model is [`crate::Error::Unsupported`] (their prediction is not the
/// per-head circuits this path computes with).
pub fn predict<T: Scalar>(
    cfg: &Config,
    step: u64,
    model: &Model<T>,
    n: usize,
    chunk: usize,
) -> Result<Predictions<T>> {
    check_one_layer(model)?;
    let task = Task::new(cfg)?;
    let (len, no) = (cfg.task.len, task.n_out);
    let (spec, circ) = (model.attention()?, model.circuits()?);
    let mut runner = Runner::<T>::scalar();
    let mut normals = Vec::new();
    let mut predictions = Vec::with_capacity(n * no);
    let mut targets = Vec::with_capacity(n * no);
    let mut first = 0;
    while first < n {
        let m = chunk.max(1).min(n - first);
        let mut batch: Batch<T> = Batch::try_zeros(m, len, task.d, no)?;
        task.sample_into(
            cfg.train.seed,
            Domain::Eval,
            len as u64,
            first as u64,
            &mut batch,
            &mut normals,
        );
        let mut out = vec![T::zero(); m * no];
        runner.predict(spec, &circ, &batch, &mut out)?;
        predictions.extend(out);
        targets.extend_from_slice(&batch.y);
        first += m;
    }
    Ok(Predictions {
        step,
        len,
        predictions,
        targets,
    })
}

/// Refuse a checkpoint [`predict`] cannot compute with: anything but one attention layer.
pub fn check_one_layer<T: Scalar>(model: &Model<T>) -> Result<()> {
    if model.spec.is_attention() {
        return Ok(());
    }
    Err(crate::Error::Unsupported(alloc::format!(
        "the embedded path predicts with one-layer attention checkpoints, not a {}",
        model.describe()
    )))
}

fn num(s: &mut String, x: f64) {
    if x.is_finite() {
        let _ = write!(s, "{x:?}");
    } else {
        s.push_str("null");
    }
}

fn list<X: Copy>(s: &mut String, xs: &[X], f: impl Fn(X) -> f64) {
    s.push('[');
    for (i, &x) in xs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        num(s, f(x));
    }
    s.push(']');
}

/// A scalar in shortest round-trip form in its own precision (an f32 is written as the f32 it
/// is, not as its f64 widening).
fn scalar<T: Scalar>(s: &mut String, x: T) {
    if !x.finite() {
        s.push_str("null");
    } else if T::NAME == "f32" {
        let _ = write!(s, "{:?}", x.to_f64() as f32);
    } else {
        let _ = write!(s, "{:?}", x.to_f64());
    }
}

/// `"omega":[..],"mu":[..],"loss":[[step,loss],..],"risk":..,"risk_stderr":..`
fn train_fields(s: &mut String, t: &TrainReport) {
    let _ = write!(s, "\"steps\":{},\"omega\":", t.steps);
    list(s, &t.omega, |x| x);
    s.push_str(",\"mu\":");
    list(s, &t.mu, |x| x);
    s.push_str(",\"loss\":[");
    for (i, &(step, loss)) in t.loss.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "[{step},");
        num(s, loss);
        s.push(']');
    }
    s.push_str("],\"risk\":");
    num(s, t.risk);
    s.push_str(",\"risk_stderr\":");
    num(s, t.risk_stderr);
}

/// All results as one JSON line (see the module's documentation): the full model's fields at the
/// top level, the reduced model's under `"reduced"`, then the checkpoint's predictions.
pub fn json<T: Scalar>(t: &TrainReport, reduced: &TrainReport, p: &Predictions<T>) -> String {
    let mut s = String::new();
    let _ = write!(s, "{{\"preset\":\"{NAME}\",\"dtype\":\"{}\",", T::NAME);
    train_fields(&mut s, t);
    let _ = write!(s, ",\"reduced\":{{\"preset\":\"{NAME_REDUCED}\",");
    train_fields(&mut s, reduced);
    s.push('}');
    let _ = write!(s, ",\"checkpoint_step\":{},\"L\":{}", p.step, p.len);
    for (key, xs) in [("predictions", &p.predictions), ("targets", &p.targets)] {
        let _ = write!(s, ",\"{key}\":[");
        for (i, &x) in xs.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            scalar(&mut s, x);
        }
        s.push(']');
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn train_is_the_trainer_and_predict_is_the_risk_stream() {
        let mut cfg = config().unwrap();
        cfg.train.steps = 20;
        let mut steps = 0;
        let rep = train::<f32>(&cfg, 32, &mut |_| steps += 1).unwrap();
        assert_eq!(steps, 20);
        // the same trainer, stepped by hand
        let mut tr = Trainer::<f32>::new(&cfg, &ScalarEngine).unwrap();
        tr.run(&mut |_, _| true).unwrap();
        let want: Vec<(u64, f64)> = tr.log.iter().map(|r| (r.step, r.loss)).collect();
        assert_eq!(rep.loss, want);
        let ana = analyze(tr.model.attention().unwrap(), &tr.model.circuits().unwrap());
        assert_eq!(
            rep.omega,
            ana.heads.iter().map(|h| h.omega).collect::<Vec<_>>()
        );
        // the risk in chunks of 16 equals the risk in one chunk
        let mut runner = Runner::<f32>::scalar();
        let r = crate::families::attention::eval::mc_risk(
            &tr.task,
            cfg.task.len,
            32,
            cfg.train.seed,
            Some((&tr.model, &mut runner)),
            &[],
        )
        .unwrap()[0];
        assert_eq!((rep.risk, rep.risk_stderr), (r.risk, r.stderr));
        // predictions: the first sequences of the evaluation stream, any chunking
        let a = predict::<f32>(&cfg, 20, &tr.model, 5, 2).unwrap();
        let b = predict::<f32>(&cfg, 20, &tr.model, 5, 5).unwrap();
        assert_eq!(a, b);
        let mut batch = Batch::<f32>::zeros(5, cfg.task.len, cfg.task.d, 1);
        tr.task.sample_into(
            cfg.train.seed,
            Domain::Eval,
            cfg.task.len as u64,
            0,
            &mut batch,
            &mut Vec::new(),
        );
        assert_eq!(a.targets, batch.y);
        let line = json(&rep, &rep, &a);
        assert!(line.starts_with("{\"preset\":\"he2025-mcu\"") && line.ends_with("]}"));
        assert!(!line.contains('\n'));
    }

    #[test]
    fn predict_refuses_a_transformer() {
        let mut cfg = crate::presets::preset("multilayer-t2").unwrap();
        cfg.set("task.L", "8").unwrap();
        let model = Model::<f32>::init(&cfg).unwrap();
        let e = predict::<f32>(&cfg, 0, &model, 2, 2).unwrap_err();
        assert!(matches!(e, crate::Error::Unsupported(_)), "{e}");
    }
}
