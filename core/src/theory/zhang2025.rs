//! Zhang, Singh, Latham, Saxe (2025), "Training Dynamics of In-Context Learning in Linear
//! Attention": population theory of the effective matrix `M` (spec §3).
//!
//! Conventions: `Lambda` is the covariate covariance with eigenvalues `lambda_1 >= .. >= lambda_D`,
//! `N` the context length, no label noise, task vector `w ~ N(0, I)`.
use alloc::vec::Vec;

/// Sorted copy of the eigenvalues, largest first (the order in which the drops happen).
fn sorted_desc(eigs: &[f64]) -> Vec<f64> {
    let mut l = eigs.to_vec();
    l.sort_by(|a, b| b.partial_cmp(a).unwrap_or(core::cmp::Ordering::Equal));
    l
}

/// Plateau losses `L(M_0), .., L(M_D)` for a fixed context length `n` (Zhang et al. 2025, eqs.
/// (19)/(63)):
///
/// `L(M_m) = tr(Lambda) - sum_{d<=m} lambda_d / (1 + (1 + tr(Lambda)/lambda_d) / N)`,
///
/// with the eigenvalues taken in decreasing order (they are sorted here, so any order may be
/// passed). The list has `D + 1` entries: `L(M_0) = tr(Lambda)` (the zero fixed point) up to
/// `L(M_D) = L*` (the global minimum). These are the levels at which the loss of ATTN_S plateaus
/// (saddle-to-saddle), and the first and last entries are the only levels of ATTN_M.
/// Example: eigenvalues (0.4, 0.3, 0.2, 0.1), N = 31 -> 1, 0.640580, 0.377372, 0.209805, 0.135995.
pub fn plateau_losses(eigs: &[f64], n: f64) -> Vec<f64> {
    plateau_losses_inv_n(eigs, 1.0 / n)
}

/// Plateau losses with `1/N` replaced by its expectation `E(1/N)` (varying context lengths /
/// next-token-prediction training, Zhang et al. 2025 eq. (26)):
///
/// `L(M_m) = tr(Lambda) - sum_{d<=m} lambda_d / (1 + E(1/N) (1 + tr(Lambda)/lambda_d))`.
///
/// For the NTP loss with prefixes of length `1..=N_max` use `e_inv_n = `[`mean_inv_uniform`]`(N_max)`
/// (0.1299111 for N_max = 31; levels 1, 0.725027, 0.533082, 0.420689, 0.379520 for (.4,.3,.2,.1)).
pub fn plateau_losses_inv_n(eigs: &[f64], e_inv_n: f64) -> Vec<f64> {
    let l = sorted_desc(eigs);
    let tr: f64 = l.iter().sum();
    let mut out = Vec::with_capacity(l.len() + 1);
    let mut acc = tr;
    out.push(acc);
    for &lam in &l {
        // lambda / (1 + E(1/N)(1 + tr/lambda)) = lambda^2 / (lambda + E(1/N)(lambda + tr)); 0 for lambda = 0.
        let den = lam + e_inv_n * (lam + tr);
        if den != 0.0 {
            acc -= lam * lam / den;
        }
        out.push(acc);
    }
    out
}

/// `E(1/N)` for `N` uniform on `{1, .., n_max}`: the harmonic number `H_{n_max} / n_max` (spec §1.2).
pub fn mean_inv_uniform(n_max: usize) -> f64 {
    if n_max == 0 {
        return f64::NAN;
    }
    let h: f64 = (1..=n_max).map(|k| 1.0 / k as f64).sum();
    h / n_max as f64
}
