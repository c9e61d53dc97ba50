//! He, Pan, Chen, Yang (2025), "In-Context Linear Regression Demystified: Training Dynamics and
//! Mechanistic Interpretability of Multi-Head Softmax Attention" (spec `he2025-multihead-softmax.md`).
//!
//! Setting: x ~ N(0, I_d), beta ~ N(0, I_d/d), y = beta^T x + eps, eps ~ N(0, sigma^2), context
//! length L; every risk includes the query noise sigma^2. The reduced model of H heads is
//! `yhat = sum_h mu_h <y, smax(omega_h X x_q)>` (eq. 3.2), and `lambda := (1 + sigma^2)/L`.
use super::ode;
use crate::rng::{self, Domain};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use nalgebra::{DMatrix, DVector};

/// Observer of [`Setting::gd_approx_loss`]: `(step, L~, omega, mu) -> keep going?`.
pub type GdObserver<'a> = dyn FnMut(usize, f64, &[f64], &[f64]) -> bool + 'a;

/// The isotropic setting (d, L, sigma^2) of He et al. (2025) §1.1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    pub d: usize,
    pub l: usize,
    pub sigma2: f64,
}

use crate::scalar::check_finite;

impl Setting {
    /// Validated setting: d >= 1, L >= 1, sigma^2 >= 0 finite.
    pub fn new(d: usize, l: usize, sigma2: f64) -> Result<Setting> {
        if d == 0 || l == 0 {
            return Err(Error::InvalidConfig(format!(
                "need d >= 1 and L >= 1 (d = {d}, L = {l})"
            )));
        }
        if !(sigma2 >= 0.0 && sigma2.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "sigma^2 must be finite and >= 0 (got {sigma2})"
            )));
        }
        Ok(Setting { d, l, sigma2 })
    }

    fn df(&self) -> f64 {
        self.d as f64
    }
    fn lf(&self) -> f64 {
        self.l as f64
    }

    /// lambda = (1 + sigma^2) / L, the weight of the kernel term of eq. (4.1).
    pub fn lambda(&self) -> f64 {
        (1.0 + self.sigma2) / self.lf()
    }

    /// xi = d / L.
    pub fn xi(&self) -> f64 {
        self.df() / self.lf()
    }

    // ------------------------------------------------------------------------------------------
    // Approximate loss (Prop. 4.1, eq. 4.1) and its gradient.

    /// Approximate loss, He et al. (2025) eq. (4.1):
    /// `L~(omega, mu) = sigma^2 + (1 - mu^T omega)^2 + lambda mu^T E mu`, `E_hh' = exp(d omega_h omega_h')`.
    pub fn approx_loss(&self, omega: &[f64], mu: &[f64]) -> Result<f64> {
        let mut go = vec![0.0; omega.len()];
        let mut gm = vec![0.0; mu.len()];
        self.approx_loss_grad(omega, mu, &mut go, &mut gm)
    }

    /// `L~` and its gradient (Prop. 4.1, eq. (4.1)), returns the loss and writes
    /// `grad_mu = -2 (1 - mu^T omega) omega + 2 lambda E mu` and
    /// `grad_omega = -2 (1 - mu^T omega) mu + 2 d lambda (E o mu mu^T) omega`.
    pub fn approx_loss_grad(
        &self,
        omega: &[f64],
        mu: &[f64],
        grad_omega: &mut [f64],
        grad_mu: &mut [f64],
    ) -> Result<f64> {
        let h = omega.len();
        if h == 0 || mu.len() != h || grad_omega.len() != h || grad_mu.len() != h {
            return Err(Error::Shape(format!(
                "omega, mu and gradients need the same length >= 1 (omega {h}, mu {})",
                mu.len()
            )));
        }
        check_finite("omega", omega)?;
        check_finite("mu", mu)?;
        let (d, lam) = (self.df(), self.lambda());
        // forward: r = 1 - mu.omega ; q = mu^T E mu
        let r = 1.0 - mu.iter().zip(omega).map(|(a, b)| a * b).sum::<f64>();
        let mut q = 0.0;
        for a in 0..h {
            let mut em = 0.0; // (E mu)_a
            let mut emo = 0.0; // ((E o mu mu^T) omega)_a / mu_a
            for b in 0..h {
                let e = libm::exp(d * omega[a] * omega[b]);
                em += e * mu[b];
                emo += e * mu[b] * omega[b];
            }
            q += mu[a] * em;
            // backward of r^2: d/dmu_a = -2 r omega_a, d/domega_a = -2 r mu_a
            // backward of lambda q: d/dmu_a = 2 lambda (E mu)_a, d/domega_a = 2 d lambda mu_a sum_b E_ab mu_b omega_b
            grad_mu[a] = -2.0 * r * omega[a] + 2.0 * lam * em;
            grad_omega[a] = -2.0 * r * mu[a] + 2.0 * d * lam * mu[a] * emo;
        }
        let loss = self.sigma2 + r * r + lam * q;
        if !loss.is_finite() {
            return Err(Error::Numerical(format!(
                "approximate loss overflowed (omega too large for d = {})",
                self.d
            )));
        }
        Ok(loss)
    }

    /// The minimiser over mu of `L~` at fixed omega (minimising eq. (4.1) in mu): `mu*(omega) = (omega omega^T + lambda E)^{-1} omega`.
    pub fn mu_star(&self, omega: &[f64]) -> Result<Vec<f64>> {
        let h = omega.len();
        if h == 0 {
            return Err(Error::Shape("omega needs at least one head".into()));
        }
        check_finite("omega", omega)?;
        let (d, lam) = (self.df(), self.lambda());
        let m = DMatrix::from_fn(h, h, |a, b| {
            omega[a] * omega[b] + lam * libm::exp(d * omega[a] * omega[b])
        });
        let rhs = DVector::from_column_slice(omega);
        let sol = m
            .lu()
            .solve(&rhs)
            .ok_or_else(|| Error::Numerical("omega omega^T + lambda E is singular".into()))?;
        Ok(sol.iter().copied().collect())
    }

    /// mu_gamma = gamma / (2 (gamma^2 + lambda sinh(d gamma^2))): the positive-head OV value on the
    /// solution manifold S_gamma (eq. (4.5), with the squared ||mu||_1 the derivation needs).
    pub fn mu_gamma(&self, gamma: f64) -> Result<f64> {
        if !(gamma > 0.0 && gamma.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "gamma must be finite and > 0 (got {gamma})"
            )));
        }
        Ok(gamma / (2.0 * (gamma * gamma + self.lambda() * libm::sinh(self.df() * gamma * gamma))))
    }

    /// `L~` on the manifold S_gamma with the optimal ||mu||_1 = 2 mu_gamma (Thm 4.2(ii)):
    /// `sigma^2 + 1 - (1 + lambda sinh(d gamma^2)/gamma^2)^{-1}`; tends to [`Setting::approx_loss_star`] as gamma -> 0.
    pub fn manifold_loss(&self, gamma: f64) -> Result<f64> {
        if !(gamma > 0.0 && gamma.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "gamma must be finite and > 0 (got {gamma})"
            )));
        }
        let r = self.lambda() * libm::sinh(self.df() * gamma * gamma) / (gamma * gamma);
        Ok(self.sigma2 + 1.0 - 1.0 / (1.0 + r))
    }

    /// Infimum of `L~` over the manifold (gamma -> 0+): `sigma^2 + (1+sigma^2) d / ((1+sigma^2) d + L)` (Thm 4.2(ii)).
    pub fn approx_loss_star(&self) -> f64 {
        let a = (1.0 + self.sigma2) * self.df();
        self.sigma2 + a / (a + self.lf())
    }

    /// Single-head `L~` optimum (Chen et al. 2024a): omega* = 1/sqrt(d),
    /// mu* = sqrt(d) / (1 + e (1 + sigma^2) d / L). Returns (omega*, mu*).
    pub fn nw_optimum(&self) -> (f64, f64) {
        let d = self.df();
        (
            1.0 / libm::sqrt(d),
            libm::sqrt(d) / (1.0 + core::f64::consts::E * (1.0 + self.sigma2) * d / self.lf()),
        )
    }

    // ------------------------------------------------------------------------------------------
    // Closed-form risks (App. F).

    /// eta* = L / (d (1 + sigma^2) + L), the optimal debiased-GD step (Thm 4.2(ii)); also lim 2 gamma mu_gamma.
    pub fn eta_star(&self) -> f64 {
        self.lf() / (self.df() * (1.0 + self.sigma2) + self.lf())
    }

    /// eta^{vgd,*} = L / (d (1 + sigma^2) + L + 1), the optimal vanilla-GD step (F.25–F.29).
    pub fn eta_vgd_star(&self) -> f64 {
        self.lf() / (self.df() * (1.0 + self.sigma2) + self.lf() + 1.0)
    }

    /// Risk of vanilla one-step GD `yhat = eta/L sum_l y_l x_l^T x_q` (F.25–F.29):
    /// `1 + sigma^2 - 2 eta + eta^2/L (d (1 + sigma^2) + L + 1)`.
    pub fn vanilla_gd_risk(&self, eta: f64) -> f64 {
        let (d, l, s2) = (self.df(), self.lf(), self.sigma2);
        1.0 + s2 - 2.0 * eta + eta * eta / l * (d * (1.0 + s2) + l + 1.0)
    }

    /// Exact finite-L risk of debiased GD `yhat = eta/L sum_l y_l (x_l - xbar)^T x_q` (derived in icl; checked against Monte Carlo in core/tests/risks.rs):
    /// `1 + sigma^2 - 2 eta (L-1)/L + eta^2 (L-1)(d (1 + sigma^2) + L) / L^2`; minimised at eta*.
    pub fn debiased_gd_risk(&self, eta: f64) -> f64 {
        let (d, l, s2) = (self.df(), self.lf(), self.sigma2);
        1.0 + s2 - 2.0 * eta * (l - 1.0) / l
            + eta * eta * (l - 1.0) * (d * (1.0 + s2) + l) / (l * l)
    }

    /// OLS risk `sigma^2 (1 + d / (L - d - 1))`; needs L > d + 1.
    pub fn ols_risk(&self) -> Result<f64> {
        if self.l <= self.d + 1 {
            return Err(Error::InvalidConfig(format!(
                "OLS risk is finite only for L > d + 1 (d = {}, L = {})",
                self.d, self.l
            )));
        }
        Ok(self.sigma2 * (1.0 + self.df() / (self.lf() - self.df() - 1.0)))
    }

    /// Monte Carlo estimate of the finite-L Bayes risk `sigma^2 + sigma^2 E tr((X^T X + d sigma^2 I)^{-1})`
    /// (ridge with lambda = d sigma^2 is Bayes-optimal for beta ~ N(0, I/d)). Sample i uses
    /// `stream(seed, Eval, L, i)`. Returns (mean, standard error). Its working memory (3 L d + 5 d^2
    /// numbers) is checked against the budget first ([`crate::budget::reserve`]).
    pub fn bayes_risk_mc(&self, n: usize, seed: u64) -> Result<(f64, f64)> {
        if n < 2 {
            return Err(Error::InvalidConfig(
                "Monte Carlo needs at least 2 samples".into(),
            ));
        }
        if self.sigma2 == 0.0 {
            return Err(Error::InvalidConfig(
                "the Bayes-risk formula needs sigma^2 > 0".into(),
            ));
        }
        let (d, l) = (self.d, self.l);
        // the normals, X and X^T (L x d each), X^T X and its inverse's work (d x d)
        let (d8, l8) = (d as u64, l as u64);
        crate::budget::reserve(crate::budget::product(&[8, d8, 3 * l8 + 5 * d8]), || {
            format!("the Bayes-risk Monte Carlo at L = {l}, d = {d} (L x d)")
        })?;
        let mut g = crate::budget::try_vec(l * d, 0.0, "bayes-risk-mc: L x d normals")?;
        let (mut s, mut ss) = (0.0, 0.0);
        for i in 0..n {
            let mut r = rng::stream(seed, Domain::Eval, l as u64, i as u64);
            rng::fill_normal(&mut r, &mut g);
            let x = DMatrix::from_row_slice(l, d, &g);
            let mut a = x.transpose() * &x;
            for k in 0..d {
                a[(k, k)] += self.df() * self.sigma2;
            }
            let inv = a
                .try_inverse()
                .ok_or_else(|| Error::Numerical("X^T X + d sigma^2 I is singular".into()))?;
            let v = self.sigma2 * (1.0 + inv.trace());
            s += v;
            ss += v * v;
        }
        let nf = n as f64;
        let m = s / nf;
        let var = ((ss / nf - m * m) * nf / (nf - 1.0)).max(0.0);
        Ok((m, libm::sqrt(var / nf)))
    }

    // ------------------------------------------------------------------------------------------
    // Dynamics: GD on L~ and the gradient flow (App. D).

    /// Plain gradient descent on `L~/2` (as the reference code's `gradient_flow`), from any start:
    /// `theta <- theta - lr grad(L~)/2`, so `steps * lr` is the flow time of [`Setting::flow_heads`].
    /// `obs(step, loss, omega, mu)` is called at step 0 and every `every` steps (and at the end);
    /// returning `false` stops. Returns the final (omega, mu).
    pub fn gd_approx_loss(
        &self,
        omega0: &[f64],
        mu0: &[f64],
        lr: f64,
        steps: usize,
        every: usize,
        obs: &mut GdObserver,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "learning rate must be finite and > 0 (got {lr})"
            )));
        }
        let h = omega0.len();
        let (mut om, mut mu) = (omega0.to_vec(), mu0.to_vec());
        let (mut go, mut gm) = (vec![0.0; h], vec![0.0; h]);
        let every = every.max(1);
        for s in 0..=steps {
            let loss = self.approx_loss_grad(&om, &mu, &mut go, &mut gm)?;
            if (s % every == 0 || s == steps) && !obs(s, loss, &om, &mu) {
                break;
            }
            if s == steps {
                break;
            }
            for i in 0..h {
                om[i] -= 0.5 * lr * go[i];
                mu[i] -= 0.5 * lr * gm[i];
            }
        }
        Ok((om, mu))
    }

    /// Gradient flow of H heads on `L~/2` (App. D): `d mu/dt = omega - (mu^T omega) omega - lambda E mu`,
    /// `d omega/dt = mu - (mu^T omega) mu - d lambda (E o mu mu^T) omega`, integrated with RK4 (step `dt`).
    /// The state passed to `obs(t, y)` is `y = [omega_1..omega_H, mu_1..mu_H]`. Returns the final state.
    pub fn flow_heads(
        &self,
        omega0: &[f64],
        mu0: &[f64],
        t_end: f64,
        dt: f64,
        obs: &mut ode::Observer,
    ) -> Result<Vec<f64>> {
        let h = omega0.len();
        if h == 0 || mu0.len() != h {
            return Err(Error::Shape(format!(
                "omega and mu need the same length >= 1 ({h} vs {})",
                mu0.len()
            )));
        }
        let y0: Vec<f64> = omega0.iter().chain(mu0).copied().collect();
        let (mut go, mut gm) = (vec![0.0; h], vec![0.0; h]);
        let mut bad = None;
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| {
            if let Err(e) = self.approx_loss_grad(&y[..h], &y[h..], &mut go, &mut gm) {
                bad = Some(e);
                dy.iter_mut().for_each(|v| *v = f64::NAN);
                return;
            }
            for i in 0..h {
                dy[i] = -0.5 * go[i];
                dy[h + i] = -0.5 * gm[i];
            }
        };
        let r = ode::rk4(&mut f, &y0, 0.0, t_end, dt, obs);
        match bad {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Right-hand side of the two-head reduced ODE (D.4) for (phi, rho) = (mu^(1), omega^(1)):
    /// `phi' = rho - 2 phi rho^2 - lambda phi (e^{d rho^2} - e^{-d rho^2})`,
    /// `rho' = phi - 2 phi^2 rho - d lambda phi^2 rho (e^{d rho^2} + e^{-d rho^2})`.
    pub fn two_head_rhs(&self, phi: f64, rho: f64) -> (f64, f64) {
        let (d, lam) = (self.df(), self.lambda());
        let ep = libm::exp(d * rho * rho);
        let em = 1.0 / ep;
        (
            rho - 2.0 * phi * rho * rho - lam * phi * (ep - em),
            phi - 2.0 * phi * phi * rho - d * lam * phi * phi * rho * (ep + em),
        )
    }

    /// Loss along (D.4): `L~/2 = (1+sigma^2)/2 - 2 phi rho + 2 phi^2 rho^2 + lambda phi^2 (e^{d rho^2} - e^{-d rho^2})`.
    pub fn two_head_loss(&self, phi: f64, rho: f64) -> f64 {
        let (d, lam) = (self.df(), self.lambda());
        let s = 2.0 * libm::sinh(d * rho * rho);
        (1.0 + self.sigma2) / 2.0 - 2.0 * phi * rho
            + 2.0 * phi * phi * rho * rho
            + lam * phi * phi * s
    }

    /// phi*(rho) = rho / (2 rho^2 + lambda (e^{d rho^2} - e^{-d rho^2})) (D.17), the phi that phase III tracks.
    pub fn phi_star(&self, rho: f64) -> f64 {
        rho / (2.0 * rho * rho + self.lambda() * 2.0 * libm::sinh(self.df() * rho * rho))
    }

    /// Integrate (D.4) from the Definition D.1 init phi = rho = alpha up to `t_end` (see [`FlowOptions`]),
    /// and report the phase markers. Trajectory rows are `[t, phi, rho, L~/2]`, one every `sample_dt`.
    pub fn two_head_flow(&self, alpha: f64, opt: &FlowOptions) -> Result<TwoHeadFlow> {
        if !(alpha > 0.0 && alpha.is_finite()) {
            return Err(Error::InvalidConfig(format!(
                "alpha must be finite and > 0 (got {alpha})"
            )));
        }
        if !(opt.t_end > 0.0) || !(opt.sample_dt > 0.0) {
            return Err(Error::InvalidConfig(
                "t_end and sample_dt must be > 0".into(),
            ));
        }
        let thr = 0.5 / libm::sqrt(self.df());
        let mut out = TwoHeadFlow {
            peak_rho: f64::NEG_INFINITY,
            tau2: 0.0,
            tau1: None,
            final_state: [0.0; 2],
            trajectory: Vec::new(),
        };
        // peak of rho refined by a parabola through the three samples around the discrete maximum
        let mut prev: [(f64, f64); 2] = [(f64::NAN, f64::NAN); 2];
        let mut next_sample = 0.0;
        let mut obs = |t: f64, y: &[f64]| {
            let (phi, rho) = (y[0], y[1]);
            if out.tau1.is_none() && phi.min(rho) > thr {
                out.tau1 = Some(t);
            }
            let (p1, p2) = (prev[0], prev[1]); // p2 is the newest before (t, rho)
            if p1.0.is_finite() && p2.1 >= p1.1 && p2.1 > rho && p2.1 > out.peak_rho {
                let (t0, r0, t1, r1, t2, r2) = (p1.0, p1.1, p2.0, p2.1, t, rho);
                let den = (t0 - t1) * (t0 - t2) * (t1 - t2);
                let a = (t2 * (r1 - r0) + t1 * (r0 - r2) + t0 * (r2 - r1)) / den;
                let b = (t2 * t2 * (r0 - r1) + t1 * t1 * (r2 - r0) + t0 * t0 * (r1 - r2)) / den;
                let c = (t1 * t2 * (t1 - t2) * r0
                    + t2 * t0 * (t2 - t0) * r1
                    + t0 * t1 * (t0 - t1) * r2)
                    / den;
                let (tp, rp) = if a < 0.0 {
                    let tp = -b / (2.0 * a);
                    (tp, c + b * tp + a * tp * tp)
                } else {
                    (t1, r1)
                };
                out.peak_rho = rp;
                out.tau2 = tp;
            }
            prev = [p2, (t, rho)];
            if t >= next_sample - 1e-12 {
                out.trajectory
                    .push([t, phi, rho, self.two_head_loss(phi, rho)]);
                next_sample += opt.sample_dt;
            }
            true
        };
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| {
            let (a, b) = self.two_head_rhs(y[0], y[1]);
            dy[0] = a;
            dy[1] = b;
        };
        let y = match opt.method {
            Method::Rk4 { dt } => ode::rk4(&mut f, &[alpha, alpha], 0.0, opt.t_end, dt, &mut obs)?,
            Method::Adaptive(a) => {
                let a = ode::Adaptive {
                    h_max: a.h_max.min(opt.sample_dt),
                    ..a
                };
                ode::rk45(&mut f, &[alpha, alpha], 0.0, opt.t_end, &a, &mut obs)?
            }
        };
        out.final_state = [y[0], y[1]];
        if let Some(last) = out.trajectory.last() {
            if last[0] < opt.t_end {
                out.trajectory
                    .push([opt.t_end, y[0], y[1], self.two_head_loss(y[0], y[1])]);
            }
        }
        if !out.peak_rho.is_finite() {
            return Err(Error::Numerical(
                "rho has no interior maximum before t_end (increase t_end)".into(),
            ));
        }
        Ok(out)
    }
}

/// Integration scheme of the flows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// Classical RK4 with a fixed step.
    Rk4 { dt: f64 },
    /// Dormand–Prince RK5(4) with the given tolerances.
    Adaptive(ode::Adaptive),
}

/// Options of [`Setting::two_head_flow`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowOptions {
    pub t_end: f64,
    pub method: Method,
    /// Spacing of the stored trajectory rows.
    pub sample_dt: f64,
}

impl Default for FlowOptions {
    /// Up to t = 2000 with RK4 (dt = 0.01), a row every 0.1.
    fn default() -> Self {
        FlowOptions {
            t_end: 2000.0,
            method: Method::Rk4 { dt: 0.01 },
            sample_dt: 0.1,
        }
    }
}

/// Result of the (D.4) flow.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoHeadFlow {
    /// max_t rho(t) (parabolic refinement between steps).
    pub peak_rho: f64,
    /// tau_2: the time of that peak (end of phase II).
    pub tau2: f64,
    /// tau_1: the first time min(phi, rho) exceeds d^{-1/2}/2 (end of phase I); `None` if never.
    pub tau1: Option<f64>,
    /// (phi, rho) at t_end.
    pub final_state: [f64; 2],
    /// Rows `[t, phi, rho, L~/2]`.
    pub trajectory: Vec<[f64; 4]>,
}

// ----------------------------------------------------------------------------------------------
// Proportional asymptotics, L -> infinity with d/L -> xi (F.33, F.36, Thm 4.2(iii)).

/// Limit of the GD risk at step eta (vanilla and debiased agree): `1 + sigma^2 - 2 eta + eta^2 (xi (1 + sigma^2) + 1)`.
pub fn gd_risk_asymptotic(xi: f64, sigma2: f64, eta: f64) -> f64 {
    1.0 + sigma2 - 2.0 * eta + eta * eta * (xi * (1.0 + sigma2) + 1.0)
}

/// Limit of the optimal GD risk (F.33): `sigma^2 + xi (1 + sigma^2) / (xi (1 + sigma^2) + 1)` (= the limit of `L~*`).
pub fn gd_risk_star_asymptotic(xi: f64, sigma2: f64) -> f64 {
    let a = xi * (1.0 + sigma2);
    sigma2 + a / (a + 1.0)
}

/// Asymptotic Bayes risk (F.36): `(sigma^2 + 1 - 1/xi + sqrt(4 sigma^2 + (sigma^2 + 1/xi - 1)^2)) / 2`.
pub fn bayes_risk_asymptotic(xi: f64, sigma2: f64) -> Result<f64> {
    if !(xi > 0.0 && xi.is_finite()) || !(sigma2 >= 0.0 && sigma2.is_finite()) {
        return Err(Error::InvalidConfig(format!(
            "need xi > 0 and sigma^2 >= 0 (xi = {xi}, sigma^2 = {sigma2})"
        )));
    }
    let t = sigma2 + 1.0 / xi - 1.0;
    Ok(0.5 * (sigma2 + 1.0 - 1.0 / xi + libm::sqrt(4.0 * sigma2 + t * t)))
}

/// Theorem 4.2(iii) bound on E(gd(eta*)) / BayesRisk: `1 + sigma^{-2} / ((1 + xi sigma^2)(1 + sigma^2 + 1/xi))`.
/// Valid for sigma^2 > 0 and sigma^2 + 1/xi > 1.
pub fn ratio_bound(xi: f64, sigma2: f64) -> Result<f64> {
    if !(sigma2 > 0.0)
        || !(xi > 0.0)
        || !(sigma2 + 1.0 / xi > 1.0)
        || !xi.is_finite()
        || !sigma2.is_finite()
    {
        return Err(Error::InvalidConfig(format!(
            "the bound needs sigma^2 > 0 and sigma^2 + 1/xi > 1 (xi = {xi}, sigma^2 = {sigma2})"
        )));
    }
    Ok(1.0 + 1.0 / (sigma2 * (1.0 + xi * sigma2) * (1.0 + sigma2 + 1.0 / xi)))
}

// ----------------------------------------------------------------------------------------------
// Anisotropic preconditioned GD (B.6, Lemma G.4).

/// Sigma~ = (1 + 1/L) Sigma + (tr Sigma + d sigma^2)/L I (B.6), row-major d x d.
pub fn sigma_tilde(sigma: &[f64], d: usize, l: usize, sigma2: f64) -> Result<Vec<f64>> {
    if sigma.len() != d * d || d == 0 || l == 0 {
        return Err(Error::Shape(format!(
            "Sigma needs d*d = {} entries (got {}), L >= 1",
            d * d,
            sigma.len()
        )));
    }
    check_finite("Sigma", sigma)?;
    let lf = l as f64;
    let tr: f64 = (0..d).map(|i| sigma[i * d + i]).sum();
    let mut out: Vec<f64> = sigma.iter().map(|s| (1.0 + 1.0 / lf) * s).collect();
    for i in 0..d {
        out[i * d + i] += (tr + d as f64 * sigma2) / lf;
    }
    Ok(out)
}

/// Exact finite-L risk of preconditioned vanilla GD `yhat = 1/L sum_l y_l x_l^T A x_q` with
/// x ~ N(0, Sigma), beta ~ N(0, I/d) (Lemma G.4; A = eta Gamma^{-1}, row-major):
/// `sigma^2 + (tr Sigma - 2 tr(Sigma A^T Sigma) + tr(Sigma Sigma~ A Sigma A^T)) / d`. Minimised at A = Sigma~^{-1}.
pub fn precond_gd_risk(sigma: &[f64], a: &[f64], d: usize, l: usize, sigma2: f64) -> Result<f64> {
    let st = sigma_tilde(sigma, d, l, sigma2)?;
    if a.len() != d * d {
        return Err(Error::Shape(format!(
            "A needs d*d = {} entries (got {})",
            d * d,
            a.len()
        )));
    }
    check_finite("A", a)?;
    let s = DMatrix::from_row_slice(d, d, sigma);
    let st = DMatrix::from_row_slice(d, d, &st);
    let am = DMatrix::from_row_slice(d, d, a);
    let t1 = s.trace();
    let t2 = (&s * am.transpose() * &s).trace();
    let t3 = (&s * &st * &am * &s * am.transpose()).trace();
    Ok(sigma2 + (t1 - 2.0 * t2 + t3) / d as f64)
}

/// Inverse of a row-major d x d matrix (helper for preconditioners).
pub fn inverse(m: &[f64], d: usize) -> Result<Vec<f64>> {
    if m.len() != d * d {
        return Err(Error::Shape(format!(
            "matrix needs d*d = {} entries (got {})",
            d * d,
            m.len()
        )));
    }
    let inv = DMatrix::from_row_slice(d, d, m)
        .try_inverse()
        .ok_or_else(|| Error::Numerical("matrix is singular".into()))?;
    Ok((0..d * d).map(|k| inv[(k / d, k % d)]).collect())
}
