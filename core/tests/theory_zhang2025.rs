//! zhang2025 theory: reference numbers of the spec (§5) and Monte Carlo checks.
use icl_core::theory::zhang2025 as z;

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < tol, "{a:?} vs {b:?}");
    }
}

#[test]
fn plateau_reference_numbers() {
    close(&z::plateau_losses(&[0.4, 0.3, 0.2, 0.1], 31.0), &[1.0, 0.640580, 0.377372, 0.209805, 0.135995], 1e-6);
    // any order of eigenvalues
    close(&z::plateau_losses(&[0.1, 0.3, 0.4, 0.2], 31.0), &[1.0, 0.640580, 0.377372, 0.209805, 0.135995], 1e-6);
    close(&z::plateau_losses(&[0.35, 0.35, 0.15, 0.15], 31.0), &[1.0, 0.688730, 0.377459, 0.257200, 0.136942], 1e-6);
    close(&z::plateau_losses(&[0.25; 4], 31.0), &[1.0, 0.784722, 0.569444, 0.354167, 0.138889], 1e-6);
    let e = z::mean_inv_uniform(31);
    assert!((e - 0.1299111).abs() < 1e-7, "{e}");
    close(&z::plateau_losses_inv_n(&[0.4, 0.3, 0.2, 0.1], e), &[1.0, 0.725027, 0.533082, 0.420689, 0.379520], 1e-6);
    let s: f64 = (1..=8).map(|d| 1.0 / d as f64).sum();
    let l: Vec<f64> = (1..=8).map(|d| 1.0 / d as f64 / s).collect();
    close(
        &z::plateau_losses(&l, 31.0),
        &[1.0, 0.671465, 0.519123, 0.424436, 0.357923, 0.307885, 0.268532, 0.236598, 0.210069],
        1e-6,
    );
    let l: Vec<f64> = (1..=8).map(|d| d as f64 / 36.0).collect();
    close(
        &z::plateau_losses(&l, 31.0),
        &[1.0, 0.811263, 0.648977, 0.513012, 0.403176, 0.319166, 0.260454, 0.226009, 0.213346],
        1e-6,
    );
}
