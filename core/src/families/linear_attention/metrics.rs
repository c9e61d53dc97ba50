//! Read-outs of a linear-attention run (Zhang et al. 2025): the effective matrix M, value weights,
//! alignment of the keys with the eigenvectors e_d, conservation-law residuals, distance to the
//! principal-component-regression solution, and plateau/drop detection on a loss curve.
use crate::config::Param;
use crate::families::linear_attention::Spectrum;
use crate::model::{Circuits, Model};
use alloc::vec;
use alloc::vec::Vec;

/// Effective matrix `M = sum_h v_h U_h` (eqs. (M), (S)) of the first output: `v_h = OV_h[0][d]`,
/// `U_h = KQ_h[0..d][0..d]` (row-major d x d), multiplied by `factor` (N / L_0 to express it in the
/// paper's 1/N convention).
pub fn effective_m(circ: &Circuits<f64>, d: usize, factor: f64) -> Vec<f64> {
    let e = circ.e;
    let mut m = vec![0.0; d * d];
    for h in 0..circ.heads {
        let v = circ.ov_head(h)[d] * factor;
        let kq = circ.kq_head(h);
        for a in 0..d {
            for b in 0..d {
                m[a * d + b] += v * kq[a * e + b];
            }
        }
    }
    m
}

/// Value weights `v_h = OV_h[0][d]` (the y-slot of the value row, first output).
pub fn value_weights(circ: &Circuits<f64>, d: usize) -> Vec<f64> {
    (0..circ.heads).map(|h| circ.ov_head(h)[d]).collect()
}

fn norm(x: &[f64]) -> f64 {
    libm::sqrt(x.iter().map(|a| a * a).sum())
}

fn cos(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>() / (na * nb)
}

/// Alignment of every key with every eigenvector (Fig. 3c): `|cos(k_{h,r}, e_d)|` for the separate
/// parametrisations, laid out [H, R, D] (d in decreasing order of eigenvalue); for the merged ones
/// `|cos(vec U_h, vec Lambda^2)|` and `|cos(vec U_h, vec M_D)|` per head ([H, 2], Fig. 9).
pub fn alignment(model: &Model<f64>, circ: &Circuits<f64>, sp: &Spectrum, inv_n: f64) -> Vec<f64> {
    let Ok(s) = model.attention() else {
        return Vec::new();
    };
    let d = s.d;
    match s.param {
        Param::Separate | Param::SeparateReduced => {
            let k = model.tensor("k").unwrap_or(&[]);
            let w = if s.param == Param::Separate { s.e() } else { d };
            let mut out = Vec::with_capacity(s.heads * s.rank * d);
            for row in k.chunks_exact(w) {
                for e_d in &sp.vectors {
                    out.push(cos(&row[..d], e_d).abs());
                }
            }
            out
        }
        _ => {
            // Lambda^2 = sum lambda^2 e e^T, M_D = PCR with all components
            let mut l2 = vec![0.0; d * d];
            for (l, e_d) in sp.lambda.iter().zip(&sp.vectors) {
                for i in 0..d {
                    for j in 0..d {
                        l2[i * d + j] += l * l * e_d[i] * e_d[j];
                    }
                }
            }
            let mstar = sp.pcr_matrix(d, inv_n);
            let mut out = Vec::with_capacity(2 * s.heads);
            for h in 0..s.heads {
                let kq = circ.kq_head(h);
                let u: Vec<f64> = (0..d * d).map(|i| kq[(i / d) * circ.e + i % d]).collect();
                out.push(cos(&u, &l2).abs());
                out.push(cos(&u, &mstar).abs());
            }
            out
        }
    }
}

/// Conserved quantities of gradient flow (eqs. 55, 83, 89), from the raw parameters:
/// separate: `|k_{h,r}|^2 - |q_{h,r}|^2` for every (h, r), then `sum_r |k_{h,r}|^2 - |OV_h|^2` per head;
/// merged: the H x H matrix `<KQ_i, KQ_j> - <OV_i, OV_j>` (`W1 W1^T - w2 w2^T`). Gradient flow keeps
/// them constant; gradient descent drifts by O(lr).
pub fn conserved(model: &Model<f64>) -> Vec<f64> {
    let Ok(s) = model.attention() else {
        return Vec::new();
    };
    let sq = |x: &[f64]| x.iter().map(|a| a * a).sum::<f64>();
    let ov_name = if matches!(s.param, Param::Separate | Param::Merged) {
        "ov"
    } else {
        "v"
    };
    let ov = model.tensor(ov_name).unwrap_or(&[]);
    let ov_w = ov.len() / s.heads.max(1);
    match s.param {
        Param::Separate | Param::SeparateReduced => {
            let (k, q) = (
                model.tensor("k").unwrap_or(&[]),
                model.tensor("q").unwrap_or(&[]),
            );
            let w = k.len() / (s.heads * s.rank).max(1);
            let mut out: Vec<f64> = k
                .chunks_exact(w)
                .zip(q.chunks_exact(w))
                .map(|(a, b)| sq(a) - sq(b))
                .collect();
            for h in 0..s.heads {
                out.push(
                    sq(&k[h * s.rank * w..(h + 1) * s.rank * w])
                        - sq(&ov[h * ov_w..(h + 1) * ov_w]),
                );
            }
            out
        }
        Param::Merged | Param::MergedReduced => {
            let kq = model
                .tensor(if s.param == Param::Merged { "kq" } else { "u" })
                .unwrap_or(&[]);
            let w = kq.len() / s.heads.max(1);
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
            let mut out = Vec::with_capacity(s.heads * s.heads);
            for i in 0..s.heads {
                for j in 0..s.heads {
                    out.push(
                        dot(&kq[i * w..(i + 1) * w], &kq[j * w..(j + 1) * w])
                            - dot(&ov[i * ov_w..(i + 1) * ov_w], &ov[j * ov_w..(j + 1) * ov_w]),
                    );
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// `||A - B||_F / ||B||_F` (absolute `||A||_F` when B = 0).
pub fn rel_dist(a: &[f64], b: &[f64]) -> f64 {
    let diff: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let nb = norm(b);
    if nb == 0.0 {
        norm(&diff)
    } else {
        norm(&diff) / nb
    }
}

/// A plateau found in a loss curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// The loss where the plateau is flattest.
    pub loss: f64,
    pub start_step: f64,
    pub end_step: f64,
    /// The step where `loss` is read (the flattest point).
    pub mid_step: f64,
    /// Its index in the curve.
    pub mid_index: usize,
}

/// Options of [`detect_plateaus`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlateauOptions {
    /// A drop needs a peak of the log-log slope `g = -d ln L / d ln t` above this.
    pub g_min: f64,
    /// Two peaks are one drop unless g falls below `valley_ratio` x the smaller peak between them.
    pub valley_ratio: f64,
    /// A plateau extends while g < `flat_ratio` x its neighbouring drops' peak slope.
    pub flat_ratio: f64,
    /// A drop must lower the loss by at least this fraction (between its neighbouring plateaus).
    pub min_drop: f64,
}

impl Default for PlateauOptions {
    fn default() -> Self {
        PlateauOptions {
            g_min: 0.3,
            valley_ratio: 0.5,
            flat_ratio: 0.1,
            min_drop: 0.03,
        }
    }
}

fn argmin_g(g: &[f64], a: usize, b: usize) -> usize {
    (a..=b)
        .min_by(|&i, &j| {
            g[i].partial_cmp(&g[j])
                .unwrap_or(core::cmp::Ordering::Equal)
        })
        .unwrap_or(a)
}

/// Plateaus of a loss curve `(step, loss)` (sorted by step), found without any theory, in log-log
/// coordinates where saddle-to-saddle dynamics has drops of comparable width: with the slope
/// `g = -d ln L / d ln(t + t_0)` (central differences), every peak of g above `g_min` is a drop
/// (peaks not separated by a valley below `valley_ratio` x the smaller peak are one drop; drops that
/// lower the loss by less than `min_drop` are ignored). The plateaus are the stretches before,
/// between and after the drops: the loss is read where g is smallest, and the plateau extends while
/// g < `flat_ratio` x the neighbouring peaks. A stretch whose smallest g is not that flat is not a
/// plateau (e.g. no initial plateau after a large init). `plateaus.len() - 1` is at most the number
/// of drops; the last plateau is the converged level when the run has converged.
pub fn detect_plateaus(curve: &[(f64, f64)], o: &PlateauOptions) -> Vec<Plateau> {
    let n = curve.len();
    if n < 5 {
        return Vec::new();
    }
    let t0 = curve
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|x| *x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let t0 = if t0.is_finite() { t0 } else { 1.0 };
    let lt: Vec<f64> = curve
        .iter()
        .map(|(t, _)| libm::log(t - curve[0].0 + t0))
        .collect();
    let ll: Vec<f64> = curve
        .iter()
        .map(|(_, l)| libm::log(l.abs().max(1e-300)))
        .collect();
    let mut g = vec![0.0; n];
    for (i, gi) in g.iter_mut().enumerate() {
        let (a, b) = (i.saturating_sub(1), (i + 1).min(n - 1));
        *gi = (ll[a] - ll[b]) / (lt[b] - lt[a]).max(1e-300);
    }
    // peaks of g, grouped into drops
    let peaks: Vec<usize> = (1..n - 1)
        .filter(|&i| g[i] >= g[i - 1] && g[i] > g[i + 1] && g[i] > o.g_min)
        .collect();
    let mut drops: Vec<(usize, usize, f64)> = Vec::new(); // (first peak, last peak, max g)
    for &p in &peaks {
        if let Some(last) = drops.last_mut() {
            let v = argmin_g(&g, last.1, p);
            if g[v] >= o.valley_ratio * last.2.min(g[p]) {
                last.1 = p;
                last.2 = last.2.max(g[p]);
                continue;
            }
        }
        drops.push((p, p, g[p]));
    }
    // valleys around the drops; drop the insignificant drops (merging their valleys)
    loop {
        let k = drops.len();
        let valley = |j: usize| -> usize {
            let a = if j == 0 { 0 } else { drops[j - 1].1 };
            let b = if j == k { n - 1 } else { drops[j].0 };
            argmin_g(&g, a, b)
        };
        let weakest = (0..k)
            .map(|j| {
                let (a, b) = (curve[valley(j)].1, curve[valley(j + 1)].1);
                (j, (a - b) / a.abs().max(1e-300))
            })
            .filter(|(_, r)| *r < o.min_drop)
            .min_by(|x, y| x.1.partial_cmp(&y.1).unwrap_or(core::cmp::Ordering::Equal));
        match weakest {
            Some((j, _)) => {
                drops.remove(j);
            }
            None => break,
        }
    }
    let k = drops.len();
    let mut out = Vec::new();
    for j in 0..=k {
        let a = if j == 0 { 0 } else { drops[j - 1].1 };
        let b = if j == k { n - 1 } else { drops[j].0 };
        let v = argmin_g(&g, a, b);
        let peak = match (j > 0, j < k) {
            (true, true) => drops[j - 1].2.min(drops[j].2),
            (true, false) => drops[j - 1].2,
            (false, true) => drops[j].2,
            (false, false) => o.g_min,
        };
        let thr = o.flat_ratio * peak;
        if g[v] >= thr {
            continue;
        }
        let (mut s, mut e) = (v, v);
        while s > a && g[s - 1] < thr {
            s -= 1;
        }
        while e < b && g[e + 1] < thr {
            e += 1;
        }
        out.push(Plateau {
            loss: curve[v].1,
            start_step: curve[s].0,
            end_step: curve[e].0,
            mid_step: curve[v].0,
            mid_index: v,
        });
    }
    out
}

/// Number of drops of a loss curve (as found by [`detect_plateaus`]'s drop detection): the
/// transitions between consecutive detected plateaus.
pub fn count_drops(plateaus: &[Plateau]) -> usize {
    plateaus.len().saturating_sub(1)
}

/// The theory level nearest to `loss`: (index m, L(M_m)).
pub fn nearest_level(levels: &[f64], loss: f64) -> (usize, f64) {
    levels
        .iter()
        .enumerate()
        .min_by(|a, b| {
            (a.1 - loss)
                .abs()
                .partial_cmp(&(b.1 - loss).abs())
                .unwrap_or(core::cmp::Ordering::Equal)
        })
        .map(|(i, &l)| (i, l))
        .unwrap_or((0, f64::NAN))
}
