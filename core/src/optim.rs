//! Optimisers with PyTorch semantics (torch.optim.SGD and torch.optim.Adam, single-tensor path).
use crate::config::{OptimizerKind, TrainConfig};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Optimiser state over a flat parameter buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Optimizer<T> {
    /// buf <- momentum buf + g (buf = g on the first step); p <- p - lr buf.
    Sgd {
        lr: f64,
        momentum: f64,
        buf: Vec<T>,
        started: bool,
    },
    /// m <- m + (1 - b1)(g - m); v <- b2 v + (1 - b2) g^2;
    /// p <- p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        t: u64,
        m: Vec<T>,
        v: Vec<T>,
    },
}

impl<T: Scalar> Optimizer<T> {
    /// Fresh state for `n` parameters.
    pub fn new(cfg: &TrainConfig, n: usize) -> Self {
        match cfg.optimizer {
            OptimizerKind::Sgd => Optimizer::Sgd {
                lr: cfg.lr,
                momentum: cfg.momentum,
                buf: vec![T::zero(); n],
                started: false,
            },
            OptimizerKind::Adam => Optimizer::Adam {
                lr: cfg.lr,
                beta1: cfg.beta1,
                beta2: cfg.beta2,
                eps: cfg.eps,
                t: 0,
                m: vec![T::zero(); n],
                v: vec![T::zero(); n],
            },
        }
    }

    /// One update of `params` with `grad`, all or nothing: the update is computed once to check
    /// that every updated parameter and moment is finite, and only then written. A gradient or an
    /// update that is not finite (a diverging step: a learning rate that overflows, `eps` that
    /// rounds to 0 in f32) is [`Error::Numerical`] naming the first bad value, with `params` and
    /// the optimiser state left as they were.
    pub fn step(&mut self, params: &mut [T], grad: &[T]) -> Result<()> {
        self.check_step(params, grad)?;
        self.apply(params, grad);
        Ok(())
    }

    /// Check that [`Optimizer::step`] with `grad` would succeed (shapes agree, the gradient and
    /// every updated parameter and moment are finite), changing nothing.
    pub fn check_step(&self, params: &[T], grad: &[T]) -> Result<()> {
        if params.len() != grad.len() {
            return Err(Error::Shape(format!(
                "{} params but {} gradients",
                params.len(),
                grad.len()
            )));
        }
        if self.len() != params.len() {
            return Err(Error::Shape(
                "optimiser state does not match the parameters".into(),
            ));
        }
        // one pass without branches (vectorised) decides; only a failing step looks for the
        // first bad value
        if self.all_finite(params, grad) {
            return Ok(());
        }
        if let Some(i) = grad.iter().position(|g| !g.finite()) {
            return Err(Error::Numerical(format!(
                "gradient[{i}] = {} is not finite",
                grad[i].to_f64()
            )));
        }
        let bad = |i: usize, what: &str, x: T| {
            Err(Error::Numerical(format!(
                "the update makes {what}[{i}] = {} (not finite)",
                x.to_f64()
            )))
        };
        match self {
            Optimizer::Sgd { buf, .. } => {
                let u = self.sgd_update();
                for i in 0..params.len() {
                    let (p, b) = u.at(params[i], grad[i], buf[i]);
                    if !p.finite() {
                        return bad(i, "params", p);
                    }
                    if !b.finite() {
                        return bad(i, "momentum buffer", b);
                    }
                }
            }
            Optimizer::Adam { m, v, .. } => {
                let u = self.adam_update();
                for i in 0..params.len() {
                    let (p, mi, vi) = u.at(params[i], grad[i], m[i], v[i]);
                    if !p.finite() {
                        return bad(i, "params", p);
                    }
                    if !mi.finite() || !vi.finite() {
                        return bad(i, "Adam moments", if mi.finite() { vi } else { mi });
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the gradient and every updated parameter and moment are finite (shapes agree).
    fn all_finite(&self, params: &[T], grad: &[T]) -> bool {
        let mut ok = true;
        match self {
            Optimizer::Sgd { buf, .. } => {
                let u = self.sgd_update();
                for ((&p, &g), &b) in params.iter().zip(grad).zip(buf) {
                    let (p, b) = u.at(p, g, b);
                    ok &= g.finite() & p.finite() & b.finite();
                }
            }
            Optimizer::Adam { m, v, .. } => {
                let u = self.adam_update();
                for (((&p, &g), &m), &v) in params.iter().zip(grad).zip(m).zip(v) {
                    let (p, m, v) = u.at(p, g, m, v);
                    ok &= g.finite() & p.finite() & m.finite() & v.finite();
                }
            }
        }
        ok
    }

    /// Write the update, for a `params` and `grad` that [`Optimizer::check_step`] accepted.
    pub(crate) fn apply(&mut self, params: &mut [T], grad: &[T]) {
        match self {
            Optimizer::Sgd { .. } => {
                let u = self.sgd_update();
                if let Optimizer::Sgd { buf, started, .. } = self {
                    for ((p, &g), b) in params.iter_mut().zip(grad).zip(buf.iter_mut()) {
                        (*p, *b) = u.at(*p, g, *b);
                    }
                    *started = true;
                }
            }
            Optimizer::Adam { .. } => {
                let u = self.adam_update();
                if let Optimizer::Adam { t, m, v, .. } = self {
                    *t += 1;
                    for i in 0..params.len() {
                        (params[i], m[i], v[i]) = u.at(params[i], grad[i], m[i], v[i]);
                    }
                }
            }
        }
    }

    /// SGD's coefficients for the next step.
    fn sgd_update(&self) -> SgdUpdate<T> {
        match self {
            Optimizer::Sgd {
                lr,
                momentum,
                started,
                ..
            } => SgdUpdate {
                lr: T::of(*lr),
                mo: T::of(*momentum),
                plain: *momentum == 0.0,
                started: *started,
            },
            Optimizer::Adam { .. } => unreachable!("sgd_update of an Adam state"),
        }
    }

    /// Adam's coefficients for the next step (t + 1).
    fn adam_update(&self) -> AdamUpdate<T> {
        match self {
            Optimizer::Adam {
                lr,
                beta1,
                beta2,
                eps,
                t,
                ..
            } => {
                let t = (*t + 1) as f64;
                let bc1 = 1.0 - libm::pow(*beta1, t);
                let bc2 = 1.0 - libm::pow(*beta2, t);
                AdamUpdate {
                    step_size: T::of(*lr / bc1),
                    bc2_sqrt: T::of(libm::sqrt(bc2)),
                    w1: T::of(1.0 - *beta1),
                    b2: T::of(*beta2),
                    w2: T::of(1.0 - *beta2),
                    e: T::of(*eps),
                }
            }
            Optimizer::Sgd { .. } => unreachable!("adam_update of an SGD state"),
        }
    }

    /// Number of parameters the state is for.
    pub fn len(&self) -> usize {
        match self {
            Optimizer::Sgd { buf, .. } => buf.len(),
            Optimizer::Adam { m, .. } => m.len(),
        }
    }

    /// Whether the state is for zero parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The step counter: Adam's t, or 1 once SGD's momentum buffer is started.
    pub fn counter(&self) -> u64 {
        match self {
            Optimizer::Sgd { started, .. } => *started as u64,
            Optimizer::Adam { t, .. } => *t,
        }
    }

    /// The state as one f64 vector: the counter, then the buffers ([`Optimizer::state`] order).
    pub fn to_flat(&self) -> Vec<f64> {
        let mut out = vec![self.counter() as f64];
        for (_, b) in self.state() {
            out.extend(b.iter().map(|x| x.to_f64()));
        }
        out
    }

    /// Rebuild the state of `cfg`'s optimiser for `n` parameters from a counter and buffers
    /// ([`Optimizer::state`] order and lengths); the hyperparameters come from `cfg`.
    pub fn restore(cfg: &TrainConfig, n: usize, counter: u64, buffers: &[&[T]]) -> Result<Self> {
        let mut o = Optimizer::new(cfg, n);
        let want = o.state().len();
        if buffers.len() != want || buffers.iter().any(|b| b.len() != n) {
            return Err(Error::Shape(format!(
                "optimiser state needs {want} buffers of {n} values"
            )));
        }
        for b in buffers {
            crate::scalar::check_finite("optimiser state", b)?;
        }
        match &mut o {
            Optimizer::Sgd { buf, started, .. } => {
                buf.copy_from_slice(buffers[0]);
                *started = counter > 0;
            }
            Optimizer::Adam { t, m, v, .. } => {
                m.copy_from_slice(buffers[0]);
                v.copy_from_slice(buffers[1]);
                *t = counter;
            }
        }
        Ok(o)
    }

    /// [`Optimizer::restore`] from the vector of [`Optimizer::to_flat`].
    pub fn from_flat(cfg: &TrainConfig, n: usize, flat: &[f64]) -> Result<Self> {
        let k = Optimizer::<T>::new(cfg, 0).state().len();
        if flat.len() != 1 + k * n || !(flat[0] >= 0.0) {
            return Err(Error::Shape(format!(
                "optimiser state needs {} values, got {}",
                1 + k * n,
                flat.len()
            )));
        }
        let bufs: Vec<Vec<T>> = (0..k)
            .map(|i| {
                flat[1 + i * n..1 + (i + 1) * n]
                    .iter()
                    .map(|&x| T::of(x))
                    .collect()
            })
            .collect();
        let refs: Vec<&[T]> = bufs.iter().map(|b| b.as_slice()).collect();
        Optimizer::restore(cfg, n, flat[0] as u64, &refs)
    }

    /// Flat view of the state buffers (for checkpoints): (name, values).
    pub fn state(&self) -> Vec<(&'static str, &[T])> {
        match self {
            Optimizer::Sgd { buf, .. } => vec![("sgd.momentum_buffer", buf.as_slice())],
            Optimizer::Adam { m, v, .. } => vec![
                ("adam.exp_avg", m.as_slice()),
                ("adam.exp_avg_sq", v.as_slice()),
            ],
        }
    }
}

/// One SGD update, element by element: buf <- momentum buf + g (g on the first step),
/// p <- p - lr buf (p <- p - lr g without momentum).
struct SgdUpdate<T> {
    lr: T,
    mo: T,
    plain: bool,
    started: bool,
}

impl<T: Scalar> SgdUpdate<T> {
    /// (updated p, updated buf).
    #[inline(always)]
    fn at(&self, p: T, g: T, b: T) -> (T, T) {
        if self.plain {
            return (p - self.lr * g, b);
        }
        let b = if self.started { self.mo * b + g } else { g };
        (p - self.lr * b, b)
    }
}

/// One Adam update, element by element (see [`Optimizer::Adam`]).
struct AdamUpdate<T> {
    step_size: T,
    bc2_sqrt: T,
    w1: T,
    b2: T,
    w2: T,
    e: T,
}

impl<T: Scalar> AdamUpdate<T> {
    /// (updated p, updated m, updated v).
    #[inline(always)]
    fn at(&self, p: T, g: T, m: T, v: T) -> (T, T, T) {
        let m = m + self.w1 * (g - m);
        let v = v * self.b2 + self.w2 * g * g;
        let denom = v.sqrt() / self.bc2_sqrt + self.e;
        (p - self.step_size * (m / denom), m, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// A step whose update is not finite changes nothing (parameters, moments, counter) and
    /// names the value; a finite step afterwards is the step a fresh optimiser takes.
    #[test]
    fn a_diverging_step_changes_nothing() {
        let mut sgd = Config::default().train;
        sgd.optimizer = OptimizerKind::Sgd;
        sgd.momentum = 0.9;
        sgd.lr = 1e300;
        let mut adam = Config::default().train;
        adam.eps = 1e-300; // 0 in f32: a zero gradient gives 0 / 0
        for (cfg, g) in [(&sgd, [1.0f32, 2.0]), (&adam, [0.0f32, 1.0])] {
            let mut o = Optimizer::<f32>::new(cfg, 2);
            let mut p = [0.5f32, -0.5];
            let before = (o.clone(), p);
            let e = o.step(&mut p, &g).unwrap_err();
            assert!(
                matches!(e, Error::Numerical(ref m) if m.contains("not finite")),
                "{e}"
            );
            assert_eq!((o.clone(), p), before, "{:?}", cfg.optimizer);
        }
        // a gradient that is not finite is refused before any update
        let mut o = Optimizer::<f64>::new(&Config::default().train, 1);
        let mut p = [1.0];
        assert!(o.step(&mut p, &[f64::NAN]).is_err());
        assert_eq!((o.counter(), p), (0, [1.0]));
        // SGD with momentum: the check and the update are the same arithmetic
        let mut cfg = sgd.clone();
        cfg.lr = 0.1;
        let mut o = Optimizer::<f64>::new(&cfg, 1);
        o.check_step(&[0.0], &[1.0]).unwrap();
        let mut p = [0.0];
        o.step(&mut p, &[1.0]).unwrap();
        o.step(&mut p, &[1.0]).unwrap();
        assert!((p[0] + 0.29).abs() < 1e-15, "{}", p[0]);
    }

    #[test]
    fn adam_first_step_is_lr_sign() {
        // With bias correction the first Adam step is lr * g / (|g| + eps') ~ lr sign(g).
        let cfg = Config::default().train;
        let mut o = Optimizer::<f64>::new(&cfg, 2);
        let mut p = [1.0, 1.0];
        o.step(&mut p, &[0.5, -2.0]).unwrap();
        assert!((p[0] - (1.0 - 1e-3)).abs() < 1e-10);
        assert!((p[1] - (1.0 + 1e-3)).abs() < 1e-10);
    }

    #[test]
    fn sgd_momentum_matches_hand_computation() {
        let mut cfg = Config::default().train;
        cfg.optimizer = OptimizerKind::Sgd;
        cfg.lr = 0.1;
        cfg.momentum = 0.9;
        let mut o = Optimizer::<f64>::new(&cfg, 1);
        let mut p = [0.0];
        o.step(&mut p, &[1.0]).unwrap(); // buf = 1, p = -0.1
        o.step(&mut p, &[1.0]).unwrap(); // buf = 1.9, p = -0.29
        assert!((p[0] + 0.29).abs() < 1e-12);
    }

    #[test]
    fn adam_minimises_a_quadratic() {
        let mut cfg = Config::default().train;
        cfg.lr = 0.05;
        let mut o = Optimizer::<f64>::new(&cfg, 1);
        let mut p = [3.0];
        for _ in 0..2000 {
            let g = [2.0 * (p[0] - 1.0)];
            o.step(&mut p, &g).unwrap();
        }
        assert!((p[0] - 1.0).abs() < 1e-3);
    }
}
