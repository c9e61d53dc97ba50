//! Explicit integrators for the small ODEs of the theory modules: classical RK4 with a fixed step
//! and adaptive Dormand–Prince RK5(4) with an error-per-step controller.
//!
//! A system is a closure `f(t, y, dy)` that writes `dy = dy/dt`. The observer `obs(t, y)` is called
//! at the initial point and after every step; returning `false` stops the integration early.
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Right-hand side `dy = f(t, y)`.
pub type Rhs<'a> = dyn FnMut(f64, &[f64], &mut [f64]) + 'a;
/// Observer `(t, y) -> keep going?`.
pub type Observer<'a> = dyn FnMut(f64, &[f64]) -> bool + 'a;

/// Scratch space of one RK4 step.
#[derive(Debug, Clone)]
pub struct Rk4 {
    k1: Vec<f64>,
    k2: Vec<f64>,
    k3: Vec<f64>,
    k4: Vec<f64>,
    tmp: Vec<f64>,
}

impl Rk4 {
    /// Scratch for a system of dimension `n`.
    pub fn new(n: usize) -> Rk4 {
        Rk4 {
            k1: vec![0.0; n],
            k2: vec![0.0; n],
            k3: vec![0.0; n],
            k4: vec![0.0; n],
            tmp: vec![0.0; n],
        }
    }

    /// One classical RK4 step of size `h` from `(t, y)`, in place:
    /// `y += h/6 (k1 + 2 k2 + 2 k3 + k4)`, `k1 = f(t, y)`, `k2 = f(t + h/2, y + h/2 k1)`,
    /// `k3 = f(t + h/2, y + h/2 k2)`, `k4 = f(t + h, y + h k3)`.
    pub fn step(&mut self, f: &mut Rhs, t: f64, y: &mut [f64], h: f64) {
        let Rk4 {
            k1,
            k2,
            k3,
            k4,
            tmp,
        } = self;
        f(t, y, k1);
        tmp.iter_mut()
            .zip(y.iter())
            .zip(k1.iter())
            .for_each(|((s, y), k)| *s = y + 0.5 * h * k);
        f(t + 0.5 * h, tmp, k2);
        tmp.iter_mut()
            .zip(y.iter())
            .zip(k2.iter())
            .for_each(|((s, y), k)| *s = y + 0.5 * h * k);
        f(t + 0.5 * h, tmp, k3);
        tmp.iter_mut()
            .zip(y.iter())
            .zip(k3.iter())
            .for_each(|((s, y), k)| *s = y + h * k);
        f(t + h, tmp, k4);
        for (i, yi) in y.iter_mut().enumerate() {
            *yi += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
}

/// Integrate from `t0` to `t1` with fixed RK4 steps of (at most) `dt`; the last step is shortened
/// to land on `t1`. Returns the final state. Errors on a bad step, a non-finite state, or more than
/// [`crate::budget::MAX_STEPS`] steps (the adaptive integrator's limit; refused before the first).
pub fn rk4(
    f: &mut Rhs,
    y0: &[f64],
    t0: f64,
    t1: f64,
    dt: f64,
    obs: &mut Observer,
) -> Result<Vec<f64>> {
    if !(dt > 0.0 && dt.is_finite()) || !(t1 >= t0) || !t0.is_finite() || !t1.is_finite() {
        return Err(Error::InvalidConfig(format!(
            "rk4 needs dt > 0 and t1 >= t0 (dt = {dt}, t0 = {t0}, t1 = {t1})"
        )));
    }
    // the adaptive integrator's limit: a step too small for the interval is refused up front
    let n = crate::budget::steps(libm::ceil((t1 - t0) / dt - 1e-9), || {
        format!("rk4 from t = {t0} to {t1} with dt = {dt}: (t1 - t0) / dt")
    })?;
    let mut y = y0.to_vec();
    let mut s = Rk4::new(y.len());
    if !obs(t0, &y) {
        return Ok(y);
    }
    let mut t = t0;
    for k in 0..n {
        let tn = if k + 1 == n {
            t1
        } else {
            t0 + (k + 1) as f64 * dt
        };
        s.step(f, t, &mut y, tn - t);
        t = tn;
        if y.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "ODE state became non-finite at t = {t}"
            )));
        }
        if !obs(t, &y) {
            break;
        }
    }
    Ok(y)
}

/// Tolerances and limits of the adaptive integrator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adaptive {
    /// Relative tolerance per step.
    pub rtol: f64,
    /// Absolute tolerance per step.
    pub atol: f64,
    /// First trial step.
    pub h0: f64,
    /// Largest step (also bounds how coarsely the observer samples the trajectory).
    pub h_max: f64,
    /// Give up after this many (accepted + rejected) steps.
    pub max_steps: usize,
}

impl Default for Adaptive {
    fn default() -> Self {
        Adaptive {
            rtol: 1e-9,
            atol: 1e-12,
            h0: 1e-3,
            h_max: f64::INFINITY,
            max_steps: crate::budget::MAX_STEPS as usize,
        }
    }
}

// Dormand–Prince 5(4) tableau (Dormand & Prince 1980; Hairer, Nørsett & Wanner, Table II.5.2).
const C: [f64; 7] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0];
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [
        19372.0 / 6561.0,
        -25360.0 / 2187.0,
        64448.0 / 6561.0,
        -212.0 / 729.0,
        0.0,
        0.0,
    ],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
        0.0,
    ],
    [
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
    ],
];
/// 5th-order weights (= last row of A, "first same as last").
const B5: [f64; 7] = [
    35.0 / 384.0,
    0.0,
    500.0 / 1113.0,
    125.0 / 192.0,
    -2187.0 / 6784.0,
    11.0 / 84.0,
    0.0,
];
/// 4th-order embedded weights.
const B4: [f64; 7] = [
    5179.0 / 57600.0,
    0.0,
    7571.0 / 16695.0,
    393.0 / 640.0,
    -92097.0 / 339200.0,
    187.0 / 2100.0,
    1.0 / 40.0,
];

/// Integrate from `t0` to `t1` with adaptive Dormand–Prince RK5(4) steps (local extrapolation:
/// the 5th-order solution is propagated). A step is accepted when the RMS of
/// `(y5 - y4) / (atol + rtol max(|y|, |y_new|))` is at most 1; the next step is
/// `h * clamp(0.9 err^(-1/5), 0.2, 5)`, never above `h_max`. Returns the final state.
pub fn rk45(
    f: &mut Rhs,
    y0: &[f64],
    t0: f64,
    t1: f64,
    opt: &Adaptive,
    obs: &mut Observer,
) -> Result<Vec<f64>> {
    if !(t1 >= t0)
        || !t0.is_finite()
        || !t1.is_finite()
        || !(opt.h0 > 0.0)
        || !(opt.rtol > 0.0)
        || !(opt.atol >= 0.0)
    {
        return Err(Error::InvalidConfig(format!(
            "rk45 needs t1 >= t0, h0 > 0, rtol > 0 (t0 = {t0}, t1 = {t1})"
        )));
    }
    let n = y0.len();
    let mut y = y0.to_vec();
    let mut k: Vec<Vec<f64>> = (0..7).map(|_| vec![0.0; n]).collect();
    let mut tmp = vec![0.0; n];
    let mut y5 = vec![0.0; n];
    if !obs(t0, &y) {
        return Ok(y);
    }
    let mut t = t0;
    let mut h = opt.h0.min(opt.h_max).min((t1 - t0).max(f64::MIN_POSITIVE));
    f(t, &y, &mut k[0]);
    let mut steps = 0usize;
    while t < t1 {
        steps += 1;
        if steps > opt.max_steps {
            return Err(Error::Numerical(format!(
                "rk45: more than {} steps before t = {t1} (reached t = {t})",
                opt.max_steps
            )));
        }
        let last = t + h >= t1;
        if last {
            h = t1 - t;
        }
        for s in 1..7 {
            for i in 0..n {
                let mut acc = y[i];
                for (j, kj) in k.iter().enumerate().take(s) {
                    acc += h * A[s][j] * kj[i];
                }
                tmp[i] = acc;
            }
            let (done, rest) = k.split_at_mut(s);
            let _ = done;
            f(t + C[s] * h, &tmp, &mut rest[0]);
        }
        // y5 = tmp of stage 7 (FSAL), error = h sum (B5 - B4) k.
        y5.copy_from_slice(&tmp);
        let mut err2 = 0.0;
        for i in 0..n {
            let mut e = 0.0;
            for (s, ks) in k.iter().enumerate() {
                e += (B5[s] - B4[s]) * ks[i];
            }
            e *= h;
            let sc = opt.atol + opt.rtol * y[i].abs().max(y5[i].abs());
            err2 += (e / sc) * (e / sc);
        }
        let err = libm::sqrt(err2 / n.max(1) as f64);
        if !err.is_finite() {
            if h < 1e-300 {
                return Err(Error::Numerical(format!(
                    "rk45: non-finite state at t = {t}"
                )));
            }
            h *= 0.2;
            continue;
        }
        if err <= 1.0 {
            t = if last { t1 } else { t + h };
            y.copy_from_slice(&y5);
            let (first, rest) = k.split_at_mut(6);
            first[0].copy_from_slice(&rest[0]);
            if !obs(t, &y) {
                break;
            }
        }
        let fac = if err == 0.0 {
            5.0
        } else {
            (0.9 * libm::pow(err, -0.2)).clamp(0.2, 5.0)
        };
        h = (h * fac).min(opt.h_max);
        if h < 1e-14 * t.abs().max(1.0) {
            return Err(Error::Numerical(format!(
                "rk45: step size underflow at t = {t}"
            )));
        }
    }
    Ok(y)
}
