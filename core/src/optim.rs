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

    /// One update of `params` with `grad`.
    pub fn step(&mut self, params: &mut [T], grad: &[T]) -> Result<()> {
        if params.len() != grad.len() {
            return Err(Error::Shape(format!(
                "{} params but {} gradients",
                params.len(),
                grad.len()
            )));
        }
        match self {
            Optimizer::Sgd {
                lr,
                momentum,
                buf,
                started,
            } => {
                if buf.len() != params.len() {
                    return Err(Error::Shape(
                        "optimiser state does not match the parameters".into(),
                    ));
                }
                let (lr, mo) = (T::of(*lr), T::of(*momentum));
                for ((p, &g), b) in params.iter_mut().zip(grad).zip(buf.iter_mut()) {
                    let dir = if *momentum == 0.0 {
                        g
                    } else {
                        *b = if *started { mo * *b + g } else { g };
                        *b
                    };
                    *p -= lr * dir;
                }
                *started = true;
            }
            Optimizer::Adam {
                lr,
                beta1,
                beta2,
                eps,
                t,
                m,
                v,
            } => {
                if m.len() != params.len() {
                    return Err(Error::Shape(
                        "optimiser state does not match the parameters".into(),
                    ));
                }
                *t += 1;
                let bc1 = 1.0 - libm::pow(*beta1, *t as f64);
                let bc2 = 1.0 - libm::pow(*beta2, *t as f64);
                let step_size = T::of(*lr / bc1);
                let bc2_sqrt = T::of(libm::sqrt(bc2));
                let (w1, b2, w2, e) = (
                    T::of(1.0 - *beta1),
                    T::of(*beta2),
                    T::of(1.0 - *beta2),
                    T::of(*eps),
                );
                for i in 0..params.len() {
                    let g = grad[i];
                    let mi = m[i];
                    m[i] = mi + w1 * (g - mi);
                    v[i] = v[i] * b2 + w2 * g * g;
                    let denom = v[i].sqrt() / bc2_sqrt + e;
                    params[i] -= step_size * (m[i] / denom);
                }
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

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
