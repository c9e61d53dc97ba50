//! The one generic finite-difference checker every gradient test uses.

/// Central differences of `f` at `x` with step `h` (relative to max(1, |x_i|)).
pub fn central_diff(f: &mut dyn FnMut(&[f64]) -> f64, x: &[f64], h: f64) -> alloc::vec::Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            let hi = h * x[i].abs().max(1.0);
            xp[i] = x[i] + hi;
            let fp = f(&xp);
            xp[i] = x[i] - hi;
            let fm = f(&xp);
            xp[i] = x[i];
            (fp - fm) / (2.0 * hi)
        })
        .collect()
}

/// Relative error `||g - g_fd|| / max(||g||, ||g_fd||, floor)`, with `g_fd` central differences
/// of `f` at `x`. The floor guards against vanishing gradients.
pub fn rel_error(
    f: &mut dyn FnMut(&[f64]) -> f64,
    x: &[f64],
    g: &[f64],
    h: f64,
    floor: f64,
) -> f64 {
    let fd = central_diff(f, x, h);
    let num: f64 = g.iter().zip(&fd).map(|(a, b)| (a - b) * (a - b)).sum();
    let na: f64 = g.iter().map(|a| a * a).sum();
    let nb: f64 = fd.iter().map(|a| a * a).sum();
    libm::sqrt(num) / libm::sqrt(na.max(nb)).max(floor)
}
