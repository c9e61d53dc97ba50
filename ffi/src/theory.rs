//! The closed forms of `icl_core::theory` that take and give plain numbers, with their inputs
//! checked (finite, in range) so that no NaN leaks out of a bad argument.
use crate::status::{FfiError, FfiResult};
use icl_core::theory::he2025::{self, Setting};

fn finite(what: &str, x: f64) -> FfiResult<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(FfiError::nonfinite(format!("{what} = {x} is not finite")))
    }
}

fn setting(d: usize, l: usize, sigma2: f64) -> FfiResult<Setting> {
    finite("sigma2", sigma2)?;
    Ok(Setting::new(d, l, sigma2)?)
}

fn out(what: &str, x: f64) -> FfiResult<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(FfiError::new(
            crate::status::icl_status::ICL_ERR_NUMERICAL,
            format!("{what} overflowed ({x})"),
        ))
    }
}

/// eta* = L / (d (1 + sigma^2) + L), the optimal debiased-GD step (He et al. 2025 Thm 4.2(ii)).
pub fn eta_star(d: usize, l: usize, sigma2: f64) -> FfiResult<f64> {
    Ok(setting(d, l, sigma2)?.eta_star())
}

/// eta^{vgd,*} = L / (d (1 + sigma^2) + L + 1), the optimal vanilla-GD step (He et al. 2025 F.25–F.29).
pub fn eta_vgd_star(d: usize, l: usize, sigma2: f64) -> FfiResult<f64> {
    Ok(setting(d, l, sigma2)?.eta_vgd_star())
}

/// mu_gamma = gamma / (2 (gamma^2 + lambda sinh(d gamma^2))) (He et al. 2025 eq. (4.5)).
pub fn mu_gamma(d: usize, l: usize, sigma2: f64, gamma: f64) -> FfiResult<f64> {
    finite("gamma", gamma)?;
    out("mu_gamma", setting(d, l, sigma2)?.mu_gamma(gamma)?)
}

/// Risk of vanilla one-step GD with step eta (He et al. 2025 F.25–F.29).
pub fn vanilla_gd_risk(d: usize, l: usize, sigma2: f64, eta: f64) -> FfiResult<f64> {
    finite("eta", eta)?;
    out(
        "vanilla GD risk",
        setting(d, l, sigma2)?.vanilla_gd_risk(eta),
    )
}

/// Exact finite-L risk of debiased one-step GD with step eta (spec §3.1).
pub fn debiased_gd_risk(d: usize, l: usize, sigma2: f64, eta: f64) -> FfiResult<f64> {
    finite("eta", eta)?;
    out(
        "debiased GD risk",
        setting(d, l, sigma2)?.debiased_gd_risk(eta),
    )
}

/// OLS risk sigma^2 (1 + d / (L - d - 1)); needs L > d + 1.
pub fn ols_risk(d: usize, l: usize, sigma2: f64) -> FfiResult<f64> {
    Ok(setting(d, l, sigma2)?.ols_risk()?)
}

/// Infimum of the approximate loss over the solution manifold (He et al. 2025 Thm 4.2(ii)).
pub fn approx_loss_star(d: usize, l: usize, sigma2: f64) -> FfiResult<f64> {
    Ok(setting(d, l, sigma2)?.approx_loss_star())
}

/// Approximate loss on the manifold S_gamma (He et al. 2025 Thm 4.2(ii)).
pub fn manifold_loss(d: usize, l: usize, sigma2: f64, gamma: f64) -> FfiResult<f64> {
    finite("gamma", gamma)?;
    out(
        "manifold loss",
        setting(d, l, sigma2)?.manifold_loss(gamma)?,
    )
}

/// Single-head optimum (omega*, mu*) of the approximate loss (Chen et al. 2024a).
pub fn nw_optimum(d: usize, l: usize, sigma2: f64) -> FfiResult<(f64, f64)> {
    Ok(setting(d, l, sigma2)?.nw_optimum())
}

/// Approximate loss L~(omega, mu) of H heads (He et al. 2025 eq. (4.1)) and, if asked, its gradient.
pub fn approx_loss(
    d: usize,
    l: usize,
    sigma2: f64,
    omega: &[f64],
    mu: &[f64],
    grad: Option<(&mut [f64], &mut [f64])>,
) -> FfiResult<f64> {
    let s = setting(d, l, sigma2)?;
    Ok(match grad {
        Some((go, gm)) => s.approx_loss_grad(omega, mu, go, gm)?,
        None => s.approx_loss(omega, mu)?,
    })
}

/// L -> infinity limit of the GD risk with d/L -> xi (He et al. 2025 F.33).
pub fn gd_risk_asymptotic(xi: f64, sigma2: f64, eta: f64) -> FfiResult<f64> {
    finite("xi", xi)?;
    finite("sigma2", sigma2)?;
    finite("eta", eta)?;
    if !(xi > 0.0 && sigma2 >= 0.0) {
        return Err(icl_core::Error::InvalidConfig(format!(
            "need xi > 0 and sigma^2 >= 0 (xi = {xi}, sigma^2 = {sigma2})"
        ))
        .into());
    }
    out(
        "asymptotic GD risk",
        he2025::gd_risk_asymptotic(xi, sigma2, eta),
    )
}

/// Asymptotic Bayes risk (He et al. 2025 F.36).
pub fn bayes_risk_asymptotic(xi: f64, sigma2: f64) -> FfiResult<f64> {
    finite("xi", xi)?;
    finite("sigma2", sigma2)?;
    Ok(he2025::bayes_risk_asymptotic(xi, sigma2)?)
}
