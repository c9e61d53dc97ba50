//! Closed forms of He et al. (2025) that take plain numbers (isotropic setting d, L, sigma^2).
//! Each writes its result to `*out`; d = 0, L = 0, negative or non-finite sigma^2 and non-finite
//! arguments are errors.
use super::{guard, put, slice, slice_mut};
use crate::status::icl_status;
use crate::theory as th;

/// eta* = L / (d (1 + sigma^2) + L), the optimal debiased one-step GD step (He et al. 2025
/// Thm 4.2(ii)).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_eta_star(
    d: usize,
    l: usize,
    sigma2: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::eta_star(d, l, sigma2)?, "out"))
}

/// eta_vgd* = L / (d (1 + sigma^2) + L + 1), the optimal vanilla one-step GD step (He et al. 2025
/// F.25-F.29).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_eta_vgd_star(
    d: usize,
    l: usize,
    sigma2: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::eta_vgd_star(d, l, sigma2)?, "out"))
}

/// mu_gamma = gamma / (2 (gamma^2 + lambda sinh(d gamma^2))), lambda = (1 + sigma^2)/L: the
/// positive heads' OV value on the solution manifold S_gamma (He et al. 2025 eq. (4.5)); gamma > 0.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_mu_gamma(
    d: usize,
    l: usize,
    sigma2: f64,
    gamma: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::mu_gamma(d, l, sigma2, gamma)?, "out"))
}

/// Risk of vanilla one-step GD yhat = eta/L sum_l y_l x_l.x_q:
/// 1 + sigma^2 - 2 eta + eta^2 (d (1 + sigma^2) + L + 1) / L (He et al. 2025 F.25-F.29).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_vanilla_gd_risk(
    d: usize,
    l: usize,
    sigma2: f64,
    eta: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::vanilla_gd_risk(d, l, sigma2, eta)?, "out"))
}

/// Exact finite-L risk of debiased one-step GD yhat = eta/L sum_l y_l (x_l - xbar).x_q:
/// 1 + sigma^2 - 2 eta (L-1)/L + eta^2 (L-1)(d (1 + sigma^2) + L)/L^2, minimised at eta*.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_debiased_gd_risk(
    d: usize,
    l: usize,
    sigma2: f64,
    eta: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::debiased_gd_risk(d, l, sigma2, eta)?, "out"))
}

/// OLS risk sigma^2 (1 + d / (L - d - 1)); needs L > d + 1 (`ICL_ERR_CONFIG` otherwise).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_ols_risk(
    d: usize,
    l: usize,
    sigma2: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::ols_risk(d, l, sigma2)?, "out"))
}

/// Infimum of the approximate loss over the solution manifold,
/// sigma^2 + (1 + sigma^2) d / ((1 + sigma^2) d + L) (He et al. 2025 Thm 4.2(ii)).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_approx_loss_star(
    d: usize,
    l: usize,
    sigma2: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::approx_loss_star(d, l, sigma2)?, "out"))
}

/// Approximate loss on the manifold S_gamma with the optimal ||mu||_1 (He et al. 2025
/// Thm 4.2(ii)); gamma > 0.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_manifold_loss(
    d: usize,
    l: usize,
    sigma2: f64,
    gamma: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::manifold_loss(d, l, sigma2, gamma)?, "out"))
}

/// Single-head optimum of the approximate loss: omega* = 1/sqrt(d), mu* = sqrt(d) / (1 + e (1 +
/// sigma^2) d / L) (Chen et al. 2024a).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_nw_optimum(
    d: usize,
    l: usize,
    sigma2: f64,
    omega: *mut f64,
    mu: *mut f64,
) -> icl_status {
    guard(|| {
        super::hmut(omega, "omega")?;
        let (o, m) = th::nw_optimum(d, l, sigma2)?;
        put(mu, m, "mu")?;
        put(omega, o, "omega")
    })
}

/// Approximate loss of H reduced heads, sigma^2 + (1 - mu.omega)^2 + lambda mu^T E mu with
/// E_hh' = exp(d omega_h omega_h') (He et al. 2025 eq. (4.1)), from `omega` and `mu` (`heads`
/// values each). `grad_omega` and `grad_mu` (optional, `heads` values each, both or neither)
/// receive its gradient.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_approx_loss(
    d: usize,
    l: usize,
    sigma2: f64,
    omega: *const f64,
    mu: *const f64,
    heads: usize,
    out: *mut f64,
    grad_omega: *mut f64,
    grad_mu: *mut f64,
) -> icl_status {
    guard(|| {
        super::hmut(out, "out")?;
        if heads == 0 {
            return Err(crate::status::FfiError::size("heads must be >= 1"));
        }
        let (o, m) = (slice(omega, heads, "omega")?, slice(mu, heads, "mu")?);
        let v = match (grad_omega.is_null(), grad_mu.is_null()) {
            (true, true) => th::approx_loss(d, l, sigma2, o, m, None)?,
            (false, false) => {
                let go = slice_mut(grad_omega, heads, "grad_omega")?;
                let gm = slice_mut(grad_mu, heads, "grad_mu")?;
                th::approx_loss(d, l, sigma2, o, m, Some((go, gm)))?
            }
            _ => {
                return Err(crate::status::FfiError::null(
                    "one of grad_omega and grad_mu (give both or neither)",
                ))
            }
        };
        put(out, v, "out")
    })
}

/// L -> infinity limit (d/L -> xi > 0) of the GD risk at step eta:
/// 1 + sigma^2 - 2 eta + eta^2 (xi (1 + sigma^2) + 1) (He et al. 2025 F.33).
#[no_mangle]
pub unsafe extern "C" fn icl_theory_gd_risk_asymptotic(
    xi: f64,
    sigma2: f64,
    eta: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::gd_risk_asymptotic(xi, sigma2, eta)?, "out"))
}

/// Asymptotic Bayes risk (He et al. 2025 F.36), xi = d/L > 0.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_bayes_risk_asymptotic(
    xi: f64,
    sigma2: f64,
    out: *mut f64,
) -> icl_status {
    guard(|| put(out, th::bayes_risk_asymptotic(xi, sigma2)?, "out"))
}
