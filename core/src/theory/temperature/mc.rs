//! Monte Carlo of the linearised-softmax layer's test error (spec §10), the check of both closed
//! forms ([`super::coefficients`], the paper's leading order, and [`super::exact`]).
//!
//! The prediction is `yhat = u/tau + b_att` (App. E, eqs. 44–47; [`super::predict_parts`]), so with
//! `r = b_att - y_l` the error is `G(tau) = E[u^2]/tau^2 + 2 E[u r]/tau + E[r^2]`: one pass estimates
//! the coefficients `a = E[u^2]`, `b = -2 E[u r]`, `c = E[r^2]` and with them the whole tau-curve.
//!
//! * [`Estimator::Plain`] samples the prompt `X`, the task `w` and the noise, and averages
//!   `u^2`, `u r`, `r^2` of the layer's own prediction.
//! * [`Estimator::Conditional`] samples `X` only and averages the exact conditional moments
//!   `E[u^2|X]`, `E[u r|X]`, `E[r^2|X]` (spec §10's variance-reduced estimator; needs m21 = 0).
//!
//! Prompt `i` draws its `l d + d + l` standard normals (inputs row by row, query last, then `w`,
//! then the `l` noises) from `rng::stream(seed, Eval, l, i)`, so the same seed gives the same
//! bytes and both estimators see the same inputs.
use super::{mat, Coeffs, Gaussian, Params};
use crate::rng::{self, Domain};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Which Monte Carlo estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimator {
    /// Sample X, w and the noise; average the squared error's parts.
    Plain,
    /// Sample X; average the moments conditional on X (spec §10).
    Conditional,
}

/// Monte Carlo estimate of the coefficients of `G(tau) = a/tau^2 - b/tau + c` with the covariance
/// of the three estimates (order a, b, c), so every derived quantity has a standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McCoeffs {
    /// Number of prompts.
    pub n: usize,
    pub coeffs: Coeffs,
    /// Covariance of the estimates of (a, b, c) (the sample covariance over prompts / n).
    pub cov: [[f64; 3]; 3],
}

impl McCoeffs {
    fn var_of(&self, grad: [f64; 3]) -> f64 {
        let mut v = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                v += grad[i] * self.cov[i][j] * grad[j];
            }
        }
        libm::sqrt(v.max(0.0))
    }

    /// `(G(tau), its standard error)`.
    pub fn g(&self, tau: f64) -> (f64, f64) {
        (
            self.coeffs.g(tau),
            self.var_of([1.0 / (tau * tau), -1.0 / tau, 1.0]),
        )
    }

    /// `(2a/b, delta-method standard error)` of the estimated coefficients.
    pub fn tau_opt(&self) -> Result<(f64, f64)> {
        let t = self.coeffs.tau_opt()?;
        let Coeffs { a, b, .. } = self.coeffs;
        Ok((t, self.var_of([2.0 / b, -2.0 * a / (b * b), 0.0])))
    }

    /// `(c - b^2/(4a), delta-method standard error)`.
    pub fn g_min(&self) -> Result<(f64, f64)> {
        let g = self.coeffs.g_min()?;
        let Coeffs { a, b, .. } = self.coeffs;
        Ok((g, self.var_of([b * b / (4.0 * a * a), -b / (2.0 * a), 1.0])))
    }
}

/// Check the shapes of a parameter set against a test distribution and a prompt length.
pub(crate) fn check(p: &Params, test: &Gaussian, l: usize) -> Result<()> {
    test.validate()?;
    let d = test.d;
    if p.d != d || p.m11.len() != d * d || p.v21.len() != d || p.m21.len() != d {
        return Err(Error::Shape(format!(
            "parameters are for d = {}, test distribution for d = {d}",
            p.d
        )));
    }
    if p.m11
        .iter()
        .chain(&p.v21)
        .chain(&p.m21)
        .any(|v| !v.is_finite())
        || !p.v22.is_finite()
    {
        return Err(Error::NonFinite("layer parameters".into()));
    }
    if l < 2 {
        return Err(Error::InvalidConfig(format!(
            "need l >= 2 tokens (got {l})"
        )));
    }
    Ok(())
}

/// Monte Carlo of the layer with parameters `p` on `n >= 2` prompts of `l` tokens from `test`.
pub fn coefficients(
    p: &Params,
    test: &Gaussian,
    l: usize,
    n: usize,
    seed: u64,
    est: Estimator,
) -> Result<McCoeffs> {
    check(p, test, l)?;
    if n < 2 {
        return Err(Error::InvalidConfig(format!(
            "need n >= 2 Monte Carlo prompts (got {n})"
        )));
    }
    if est == Estimator::Conditional && p.m21.iter().any(|v| *v != 0.0) {
        return Err(Error::Unsupported(
            "the conditional estimator needs m21 = 0 (use the plain one)".into(),
        ));
    }
    // the sampler's normals and inputs (l x d each), the labels and scratch (l), a row of
    // three numbers per prompt, and the Cholesky factors (d x d)
    let (d8, l8) = (test.d as u64, l as u64);
    crate::budget::reserve(
        crate::budget::product(&[8, l8, 2 * d8 + 4]).and_then(|x| {
            x.checked_add(crate::budget::product(&[3 * 8, n as u64])?)?
                .checked_add(crate::budget::product(&[4 * 8, d8, d8])?)
        }),
        || {
            alloc::format!(
                "the temperature Monte Carlo of n = {n} prompts of l = {l} tokens in d = {} (l x d, n)",
                test.d
            )
        },
    )?;
    let sig = libm::sqrt(test.sigma2);
    let mut smp = Sampler::new(test, l)?;
    let mut w = vec![0.0; test.d];
    let mut y = vec![0.0; l - 1];
    let mut scratch = Scratch::new(test.d, l);
    let mut rows: Vec<[f64; 3]> = Vec::with_capacity(n);
    for i in 0..n {
        smp.draw(seed, i);
        let m = match est {
            Estimator::Plain => {
                let yl = smp.labels(sig, &mut w, &mut y);
                let (u, b) = super::predict_parts(p, &smp.x, &y)?;
                let r = b - yl;
                [u * u, -2.0 * u * r, r * r]
            }
            Estimator::Conditional => scratch.conditional(p, test, &smp.x),
        };
        rows.push(m);
    }
    let (mean, cov) = mean_cov(&rows);
    Ok(McCoeffs {
        n,
        coeffs: Coeffs {
            a: mean[0],
            b: mean[1],
            c: mean[2],
        },
        cov,
    })
}

/// The sample mean of K per-prompt values and the covariance of that mean (sample covariance / n).
pub(crate) fn mean_cov<const K: usize>(rows: &[[f64; K]]) -> ([f64; K], [[f64; K]; K]) {
    let nf = rows.len() as f64;
    let mut mean = [0.0; K];
    for m in rows {
        for k in 0..K {
            mean[k] += m[k];
        }
    }
    for v in mean.iter_mut() {
        *v /= nf;
    }
    let mut cov = [[0.0; K]; K];
    for m in rows {
        for i in 0..K {
            for j in 0..K {
                cov[i][j] += (m[i] - mean[i]) * (m[j] - mean[j]);
            }
        }
    }
    for row in &mut cov {
        for v in row.iter_mut() {
            *v /= (nf - 1.0).max(1.0) * nf;
        }
    }
    (mean, cov)
}

/// The prompts of every Monte Carlo of the temperature module: prompt `i` draws its `l d + d + l`
/// standard normals (inputs row by row, query last, then `w`, then the `l` noises) from
/// `rng::stream(seed, Eval, l, i)`, so every estimator of one seed sees the same inputs.
pub(crate) struct Sampler {
    d: usize,
    l: usize,
    lx: Chol,
    lw: Chol,
    mu_x: Vec<f64>,
    mu_w: Vec<f64>,
    g: Vec<f64>,
    /// The l inputs of the current prompt, row by row (query last).
    pub x: Vec<f64>,
}

impl Sampler {
    pub fn new(test: &Gaussian, l: usize) -> Result<Sampler> {
        let d = test.d;
        let chol = |what: &str, v: &[f64]| {
            mat(d, v)
                .cholesky()
                .map(|c| Chol::new(&c.l()))
                .ok_or_else(|| Error::Numerical(format!("{what} is not positive definite")))
        };
        Ok(Sampler {
            d,
            l,
            lx: chol("Sigma_x", &test.sigma_x)?,
            lw: chol("Sigma_w", &test.sigma_w)?,
            mu_x: test.mu_x.clone(),
            mu_w: test.mu_w.clone(),
            g: vec![0.0; l * d + d + l],
            x: vec![0.0; l * d],
        })
    }

    /// Draw prompt `i`'s normals and its inputs `x_t = mu_x + L_x g_t`.
    pub fn draw(&mut self, seed: u64, i: usize) {
        self.draw_from(rng::stream(seed, Domain::Eval, self.l as u64, i as u64));
    }

    /// Draw a prompt from the stream `r` (inputs, then `w`, then the noises, as [`Sampler::draw`]).
    pub fn draw_from(&mut self, mut r: rng::Rng) {
        let (d, l) = (self.d, self.l);
        rng::fill_normal(&mut r, &mut self.g);
        for t in 0..l {
            self.lx.affine(
                &self.mu_x,
                &self.g[t * d..(t + 1) * d],
                &mut self.x[t * d..(t + 1) * d],
            );
        }
    }

    /// The task `w = mu_w + L_w g` and the labels of the current prompt: fills `w` and the l - 1
    /// context labels `y`, returns the query's target `y_l` (noise `sigma` included).
    pub fn labels(&self, sigma: f64, w: &mut [f64], y: &mut [f64]) -> f64 {
        let (d, l) = (self.d, self.l);
        self.lw.affine(&self.mu_w, &self.g[l * d..l * d + d], w);
        let eps = &self.g[l * d + d..];
        for t in 0..l - 1 {
            y[t] = dot(w, &self.x[t * d..(t + 1) * d]) + sigma * eps[t];
        }
        dot(w, &self.x[(l - 1) * d..]) + sigma * eps[l - 1]
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A lower-triangular Cholesky factor, row-major, and whether it is diagonal.
struct Chol {
    d: usize,
    rows: Vec<f64>,
    diagonal: bool,
}

impl Chol {
    fn new(l: &nalgebra::DMatrix<f64>) -> Chol {
        let d = l.nrows();
        let rows = super::rows(l);
        let diagonal = (0..d * d).all(|k| k / d == k % d || rows[k] == 0.0);
        Chol { d, rows, diagonal }
    }

    /// `out = mu + L g` (the same numbers whichever branch: a diagonal L has zero products).
    fn affine(&self, mu: &[f64], g: &[f64], out: &mut [f64]) {
        let d = self.d;
        for i in 0..d {
            out[i] = if self.diagonal {
                mu[i] + self.rows[i * d + i] * g[i]
            } else {
                mu[i] + dot(&self.rows[i * d..i * d + i + 1], &g[..i + 1])
            };
        }
    }
}

/// Per-prompt buffers of the conditional estimator.
struct Scratch {
    sx: Vec<f64>,
    p: Vec<f64>,
    h: Vec<f64>,
    gv: Vec<f64>,
    q: Vec<f64>,
    cv: Vec<f64>,
    swg: Vec<f64>,
}

impl Scratch {
    fn new(d: usize, l: usize) -> Scratch {
        Scratch {
            sx: vec![0.0; d],
            p: vec![0.0; d],
            h: vec![0.0; l - 1],
            gv: vec![0.0; d],
            q: vec![0.0; d],
            cv: vec![0.0; d],
            swg: vec![0.0; d],
        }
    }

    /// Spec §10 (l below is the number of keys, s_x and C_xx theirs: [`Params::keys`]): with
    /// `p = M11 x_l`, `h_i = v22/l (x_i - s_x)^T p` (i < l), `g = sum_i h_i x_i`,
    /// `c0 = p^T C_xx v21`, `b0 = v21^T s_x`, `q = v22/l sum_{i<l} x_i - x_l`, `u = c0 + g^T w + h^T eps`
    /// and `r = b0 + q^T w + v22/l 1^T eps - eps_l`; with `gamma = c0 + g^T mu_w`, `rho = b0 + q^T mu_w`:
    /// `E[u^2|X] = gamma^2 + g^T Sigma_w g + sigma^2 |h|^2`,
    /// `E[u r|X] = gamma rho + g^T Sigma_w q + sigma^2 v22/l sum_i h_i`,
    /// `E[r^2|X] = rho^2 + q^T Sigma_w q + sigma^2 (v22^2 n/l^2 + 1)` (n: the number of labels).
    /// Returns `[E[u^2|X], -2 E[u r|X], E[r^2|X]]`.
    fn conditional(&mut self, p: &Params, test: &Gaussian, x: &[f64]) -> [f64; 3] {
        let d = p.d;
        let l = x.len() / d;
        // the statistics are the keys' (the first nk rows): all l tokens, or the l - 1 context ones
        let nk = p.keys(l);
        let lf = nk as f64;
        let v22 = p.v22;
        let xq = &x[(l - 1) * d..];
        self.sx.iter_mut().for_each(|v| *v = 0.0);
        for t in 0..nk {
            for j in 0..d {
                self.sx[j] += x[t * d + j] / lf;
            }
        }
        for i in 0..d {
            self.p[i] = dot(&p.m11[i * d..(i + 1) * d], xq);
        }
        // C_xx v21 = 1/l sum_t x_t (x_t . v21) - s_x (s_x . v21)
        let sxv = dot(&self.sx, &p.v21);
        self.cv.iter_mut().for_each(|v| *v = 0.0);
        self.gv.iter_mut().for_each(|v| *v = 0.0);
        self.q.iter_mut().for_each(|v| *v = 0.0);
        let sxp = dot(&self.sx, &self.p);
        for t in 0..l {
            let xt = &x[t * d..(t + 1) * d];
            let xv = dot(xt, &p.v21) / lf;
            if t + 1 < l {
                let h = v22 / lf * (dot(xt, &self.p) - sxp);
                self.h[t] = h;
                for j in 0..d {
                    self.cv[j] += xt[j] * xv;
                    self.gv[j] += h * xt[j];
                    self.q[j] += v22 / lf * xt[j];
                }
            } else if nk == l {
                for j in 0..d {
                    self.cv[j] += xt[j] * xv;
                }
            }
        }
        for j in 0..d {
            self.cv[j] -= self.sx[j] * sxv;
            self.q[j] -= xq[j];
        }
        let c0 = dot(&self.p, &self.cv);
        let gam = c0 + dot(&self.gv, &test.mu_w);
        let rho = sxv + dot(&self.q, &test.mu_w);
        let s2 = test.sigma2;
        for i in 0..d {
            self.swg[i] = dot(&test.sigma_w[i * d..(i + 1) * d], &self.gv);
        }
        let gsg = dot(&self.gv, &self.swg);
        let gsq = dot(&self.swg, &self.q);
        let qsq: f64 = (0..d)
            .map(|i| self.q[i] * dot(&test.sigma_w[i * d..(i + 1) * d], &self.q))
            .sum();
        let hh: f64 = self.h.iter().map(|v| v * v).sum();
        let hs: f64 = self.h.iter().sum();
        let uu = gam * gam + gsg + s2 * hh;
        let ur = gam * rho + gsq + s2 * v22 / lf * hs;
        let rr = rho * rho + qsq + s2 * (v22 * v22 * (l - 1) as f64 / (lf * lf) + 1.0);
        [uu, -2.0 * ur, rr]
    }
}
