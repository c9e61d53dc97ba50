//! Pretraining the linearised layer by gradient descent on eq. (2) prompts at tau = 1, instead of
//! setting its parameters by Lemma 4.1: what "pretrained" means when it is measured.
//!
//! Trained: M11 (d x d) and v21 (d); held: m21 = 0 (Assumption 4.5) and v22 = 1/d, the paper's
//! normalisation (the loss fixes only the product v22 M11 in the attention term, and the bias
//! `v22 s_y` only pushes v22 towards 0 with M11 growing to compensate; Lemma 4.1's eq. 57 makes
//! the same choice). Loss: `(yhat - y_l)^2` with `yhat = z^T M11 x_l + v21^T s_x + v22 s_y`,
//! `z = C_xx v21 + v22 C_xy` (App. E; [`super::predict_parts`] at tau = 1). Its gradients:
//! `d/dM11 = 2 e z x_l^T`, `d/dv21 = 2 e (C_xx M11 x_l + s_x)` with `e = yhat - y_l`.
//! Online SGD on fresh batches (prompt b of step t from `stream(seed, Train, t, b)`), step
//! `lr / (1 + 10 t/steps)`, and the average of the iterates over the second half (Polyak–Ruppert).
//!
//! What it converges to: the loss minimiser, which is not Lemma 4.1's parameters. In the isotropic
//! case the minimiser is `M11 = M11_lemma / tau_opt` with the exact form's tau_opt of the training
//! distribution (the layer's error in the scale s of M11 is `a s^2 - b s + c`, minimised at
//! `s = b/(2a) = 1/tau_opt`): Lemma 4.1 at tau = 1 is the leading-order imitation of Bayes ridge,
//! and the exact error prefers a smaller attention scale (1/1.49 at d = 50, l = 100).
use super::mc::Sampler;
use super::{mat, rows, Gaussian, Params};
use crate::rng::{self, Domain};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// SGD settings of [`fit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    pub steps: usize,
    pub batch: usize,
    /// Step size, in units of `d^2 / (tr Sigma_x / d)^2` (the inverse curvature of one entry of
    /// M11: z ~ w/d and x_l ~ 1 per coordinate).
    pub lr: f64,
    pub seed: u64,
}

/// The fitted parameters and the mean training loss of each tenth of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub params: Params,
    pub losses: Vec<f64>,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Fit M11 and v21 by SGD on prompts of `l` tokens from `train`, starting from M11 = 0, v21 = 0.
pub fn fit(train: &Gaussian, l: usize, o: FitOptions) -> Result<Fit> {
    train.validate()?;
    if l < 2 || o.steps < 2 || o.batch == 0 || !(o.lr > 0.0 && o.lr.is_finite()) {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2, steps >= 2, batch >= 1 and lr > 0 (l = {l}, steps = {}, batch = {}, lr = {})",
            o.steps, o.batch, o.lr
        )));
    }
    let d = train.d;
    let lf = l as f64;
    let v22 = 1.0 / d as f64;
    let tr = mat(d, &train.sigma_x).trace();
    let scale = tr / d as f64;
    let eta = o.lr * (d * d) as f64 / (scale * scale);
    let sig = libm::sqrt(train.sigma2);
    let mut m11 = vec![0.0; d * d];
    let mut v21 = vec![0.0; d];
    let (mut avg_m, mut avg_v, mut n_avg) = (vec![0.0; d * d], vec![0.0; d], 0usize);
    let mut smp = Sampler::new(train, l)?;
    let (mut w, mut y) = (vec![0.0; d], vec![0.0; l - 1]);
    let (mut gm, mut gv) = (vec![0.0; d * d], vec![0.0; d]);
    let (mut sx, mut cxy, mut cv, mut p, mut cp, mut z) = (
        vec![0.0; d],
        vec![0.0; d],
        vec![0.0; d],
        vec![0.0; d],
        vec![0.0; d],
        vec![0.0; d],
    );
    let mut losses = Vec::with_capacity(10);
    let (mut acc, mut acc_n) = (0.0, 0usize);
    for t in 0..o.steps {
        gm.iter_mut().for_each(|v| *v = 0.0);
        gv.iter_mut().for_each(|v| *v = 0.0);
        for b in 0..o.batch {
            smp.draw_from(rng::stream(o.seed, Domain::Train, t as u64, b as u64));
            let yl = smp.labels(sig, &mut w, &mut y);
            let x = &smp.x;
            let xq = &x[(l - 1) * d..];
            sx.iter_mut().for_each(|v| *v = 0.0);
            cxy.iter_mut().for_each(|v| *v = 0.0);
            cv.iter_mut().for_each(|v| *v = 0.0);
            cp.iter_mut().for_each(|v| *v = 0.0);
            for k in 0..d {
                p[k] = dot(&m11[k * d..(k + 1) * d], xq);
            }
            for s in 0..l {
                let xs = &x[s * d..(s + 1) * d];
                let (xv, xp) = (dot(xs, &v21) / lf, dot(xs, &p) / lf);
                let ys = if s + 1 < l { y[s] / lf } else { 0.0 };
                for k in 0..d {
                    sx[k] += xs[k] / lf;
                    cxy[k] += ys * xs[k];
                    cv[k] += xs[k] * xv;
                    cp[k] += xs[k] * xp;
                }
            }
            let sy = y.iter().sum::<f64>() / lf;
            let (sxv, sxp) = (dot(&sx, &v21), dot(&sx, &p));
            for k in 0..d {
                cxy[k] -= sy * sx[k];
                cv[k] -= sx[k] * sxv;
                cp[k] -= sx[k] * sxp;
                z[k] = cv[k] + v22 * cxy[k];
            }
            let yhat = dot(&z, &p) + sxv + v22 * sy;
            let e = yhat - yl;
            acc += e * e;
            acc_n += 1;
            let g = 2.0 * e / o.batch as f64;
            for i in 0..d {
                for j in 0..d {
                    gm[i * d + j] += g * z[i] * xq[j];
                }
                gv[i] += g * (cp[i] + sx[i]);
            }
        }
        let eta_t = eta / (1.0 + 10.0 * t as f64 / o.steps as f64);
        for (m, g) in m11.iter_mut().zip(&gm) {
            *m -= eta_t * g;
        }
        for (v, g) in v21.iter_mut().zip(&gv) {
            *v -= eta_t * g;
        }
        if !m11.iter().chain(&v21).all(|v| v.is_finite()) {
            return Err(Error::Numerical(format!(
                "SGD diverged at step {t} (lower lr = {})",
                o.lr
            )));
        }
        if 2 * t >= o.steps {
            for (a, m) in avg_m.iter_mut().zip(&m11) {
                *a += m;
            }
            for (a, v) in avg_v.iter_mut().zip(&v21) {
                *a += v;
            }
            n_avg += 1;
        }
        if (t + 1) * 10 / o.steps != t * 10 / o.steps {
            losses.push(acc / acc_n.max(1) as f64);
            acc = 0.0;
            acc_n = 0;
        }
    }
    let n = n_avg.max(1) as f64;
    Ok(Fit {
        params: Params {
            d,
            m11: avg_m.iter().map(|v| v / n).collect(),
            m21: vec![0.0; d],
            v21: avg_v.iter().map(|v| v / n).collect(),
            v22,
            self_attend: true,
        },
        losses,
    })
}

/// Relative Frobenius distance `|A - B| / |B|` of two d x d row-major matrices.
pub fn rel_frobenius(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    libm::sqrt(num / den.max(1e-300))
}

/// `M11 / s` (row-major), e.g. Lemma 4.1's M11 divided by the exact tau_opt.
pub fn scaled(m11: &[f64], s: f64) -> Vec<f64> {
    let d = libm::sqrt(m11.len() as f64) as usize;
    rows(&(mat(d, m11) / s))
}
