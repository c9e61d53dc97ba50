//! In-context IV regression data (multilayer paper eq. (8), §6.1, with Liang et al.'s laws; the
//! query of Algorithm 2). Stage 1 sees `[z; x]` with the query `[z_q; 0]` and target `x_q`; the
//! one-stage "TF Ref" sees `[x; y]` with query `[x_q; 0]`, target `y_q`.
use super::batch::{fill_rows_serial, Batch};
use crate::config::{IvQuery, IvTheta, TaskConfig};
use crate::rng::{self, Domain, Rng};
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// IV dimensions (q instruments, p endogenous regressors) and the law of a sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iv {
    pub q: usize,
    pub p: usize,
    pub law: IvLaw,
    /// The data law of the streams (`task.data_law`).
    pub data_law: crate::rng::Law,
}

/// What the keys `task.iv_endogeneity`, `task.iv_theta` and `task.iv_query` change in
/// [`iv_sequence_with`]; the default is the spec's law (Liang et al.'s, with Algorithm 2's query).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IvLaw {
    /// The scale c of the confounder: u ~ N(0, c^2 I_p), so its effect on x (Phi^T u) and on y
    /// (phi^T u) both scale by c.
    pub endogeneity: f64,
    pub theta: IvTheta,
    pub query: IvQuery,
}

impl Default for IvLaw {
    fn default() -> Self {
        IvLaw {
            endogeneity: 1.0,
            theta: IvTheta::Gaussian,
            query: IvQuery::Paper,
        }
    }
}

impl IvLaw {
    /// The law a task section describes.
    pub fn of_task(t: &TaskConfig) -> IvLaw {
        IvLaw {
            endogeneity: t.iv_endogeneity,
            theta: t.iv_theta,
            query: t.iv_query,
        }
    }
}

/// A batch of IV sequences in the two views the models need.
#[derive(Debug, Clone, PartialEq)]
pub struct IvBatch<T> {
    /// Stage 1: tokens `[z_l; x_l]`, query `[z_q; 0]`, target `x_q` (n_out = p).
    pub st1: Batch<T>,
    /// The context labels y (n x L).
    pub y: Vec<T>,
    /// The noise-free query targets `y_q = beta^T x_q` (n).
    pub yq: Vec<T>,
}

impl Iv {
    /// q instruments and p regressors under the default law ([`IvLaw::default`]).
    pub fn new(q: usize, p: usize) -> Iv {
        Iv {
            q,
            p,
            law: IvLaw::default(),
            data_law: crate::rng::Law::V1,
        }
    }

    /// The IV task of a task section: q = `task.iv_q`, p = `task.d` and its law.
    pub fn of_task(t: &TaskConfig) -> Iv {
        Iv {
            q: t.iv_q,
            p: t.d,
            law: IvLaw::of_task(t),
            data_law: crate::rng::Law::of(t.data_law),
        }
    }

    /// Stage-1 view of one sequence into `z` ((L+1)(q+p)) and `t` (p).
    pub fn stage1<T: Scalar>(&self, s: &IvSequence, len: usize, z: &mut [T], t: &mut [T]) {
        let (q, p) = (self.q, self.p);
        let e = q + p;
        for l in 0..=len {
            let tok = &mut z[l * e..(l + 1) * e];
            for i in 0..q {
                tok[i] = T::of(if l < len { s.z[l * q + i] } else { s.zq[i] });
            }
            for j in 0..p {
                tok[q + j] = if l < len {
                    T::of(s.x[l * p + j])
                } else {
                    T::zero()
                };
            }
        }
        for j in 0..p {
            t[j] = T::of(s.xq[j]);
        }
    }

    /// The one-stage view ("TF Ref") into `z` ((L+1)(p+1)) and `y` (1): `[x; y]`, query `[x_q; 0]`,
    /// target the noise-free `y_q`.
    pub fn one_stage<T: Scalar>(&self, s: &IvSequence, len: usize, z: &mut [T], y: &mut [T]) {
        let p = self.p;
        let e = p + 1;
        for l in 0..=len {
            let tok = &mut z[l * e..(l + 1) * e];
            for j in 0..p {
                tok[j] = T::of(if l < len { s.x[l * p + j] } else { s.xq[j] });
            }
            tok[p] = if l < len { T::of(s.y[l]) } else { T::zero() };
        }
        y[0] = T::of(s.yq);
    }

    /// One sequence from `rng`.
    pub fn draw(&self, rng: &mut Rng, len: usize) -> IvSequence {
        iv_sequence_with(rng, self.q, self.p, len, &self.law)
    }

    /// Sequence b of (seed, domain, step, first + b) into its blocks of the four buffers of an
    /// [`IvBatch`]: stage-1 tokens ((L+1)(q+p)), stage-1 target (p), labels (L), `y_q` (1).
    #[allow(clippy::too_many_arguments)]
    pub fn write_sequence<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        b: u64,
        len: usize,
        rows: &mut [&mut [T]],
    ) {
        let s = self.draw(
            &mut rng::stream_in(self.data_law, seed, domain, step, b),
            len,
        );
        if let [z, t, y, yq] = rows {
            self.stage1(&s, len, z, t);
            for (v, &x) in y.iter_mut().zip(&s.y) {
                *v = T::of(x);
            }
            yq[0] = T::of(s.yq);
        }
    }

    /// A batch of both-stage views from (seed, domain, step, first + b), one sequence after
    /// another (training fills its batch through the engine, [`crate::families::iv::sample_into`]).
    pub fn sample_batch<T: Scalar>(
        &self,
        seed: u64,
        domain: Domain,
        step: u64,
        first: u64,
        n: usize,
        len: usize,
    ) -> Result<IvBatch<T>> {
        let mut out = IvBatch::try_zeros(*self, n, len)?;
        fill_rows_serial(n, &mut out.rows(), &|b, rows, _| {
            self.write_sequence(seed, domain, step, first + b as u64, len, rows)
        });
        Ok(out)
    }
}

impl<T: Scalar> IvBatch<T> {
    /// An all-zero batch of `n` sequences of length `len`.
    pub fn try_zeros(iv: Iv, n: usize, len: usize) -> Result<Self> {
        Ok(IvBatch {
            st1: Batch::try_zeros(n, len, iv.q, iv.p)?,
            y: vec![T::zero(); n * len],
            yq: vec![T::zero(); n],
        })
    }
    /// The four buffers [`Iv::write_sequence`] fills, in its order.
    pub fn rows(&mut self) -> [&mut [T]; 4] {
        [
            &mut self.st1.z[..],
            &mut self.st1.y[..],
            &mut self.y[..],
            &mut self.yq[..],
        ]
    }
}

/// One IV sequence (eq. 8, Liang et al. 2024 conventions): `z ~ N(0, I_q)`, confounder `u ~ N(0, I_p)`,
/// `x = theta^T z + Phi^T u + omega`, `y = beta^T x + phi^T u + eps`, with theta (q x p) iid N(0,1)
/// rescaled to ||theta||_F = sqrt(q p), Phi iid N(0,1), phi ~ N(0, I_p), beta ~ N(0, I_p/p),
/// omega ~ N(0, I_p), eps ~ N(0, 1). Query: z_q ~ N(0, I_q), noise-free x_q = theta^T z_q, y_q = beta^T x_q.
/// [`IvLaw`] varies this: u's scale, theta's law and the query (see [`iv_sequence_with`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IvSequence {
    pub z: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub zq: Vec<f64>,
    pub xq: Vec<f64>,
    pub yq: f64,
    pub beta: Vec<f64>,
    pub theta: Vec<f64>,
}

/// The ideal stage-1 fit of §6.2 (what the stage-1 block is meant to compute): the one-step GD
/// estimate with the leave-one-out inference mask,
/// `xhat_l = 1/L sum_{l' != l} x_l' z_l'^T z_l` for the L context rows (L x p, row-major) and
/// `xhat_q = 1/L sum_l' x_l' z_l'^T z_q` (p).
pub fn iv_ideal_stage1(s: &IvSequence, q: usize, p: usize) -> (Vec<f64>, Vec<f64>) {
    let l = s.y.len();
    // G = 1/L sum_l x_l z_l^T (p x q)
    let mut g = vec![0.0; p * q];
    for t in 0..l {
        for j in 0..p {
            for i in 0..q {
                g[j * q + i] += s.x[t * p + j] * s.z[t * q + i] / l as f64;
            }
        }
    }
    let apply = |zv: &[f64]| -> Vec<f64> {
        (0..p)
            .map(|j| (0..q).map(|i| g[j * q + i] * zv[i]).sum())
            .collect()
    };
    let mut xh = Vec::with_capacity(l * p);
    for t in 0..l {
        let zt = &s.z[t * q..(t + 1) * q];
        let own: f64 = zt.iter().map(|v| v * v).sum::<f64>() / l as f64;
        let full = apply(zt);
        xh.extend((0..p).map(|j| full[j] - own * s.x[t * p + j]));
    }
    (xh, apply(&s.zq))
}

/// Sample an [`IvSequence`] with `l` context rows under the default law.
pub fn iv_sequence(rng: &mut Rng, q: usize, p: usize, l: usize) -> IvSequence {
    iv_sequence_with(rng, q, p, l, &IvLaw::default())
}

/// Sample an [`IvSequence`] with `l` context rows under `law`. The normals are drawn in one order
/// whatever the law (theta's q p, Phi's p p, phi, beta, z, u, omega, eps, z_q; then, for the
/// `liang` query only, omega_q and eps_q), so the default law gives the bits it always gave, and
/// two laws on one stream share their draws:
/// * `endogeneity` c multiplies u (c = 1 is exact);
/// * `orthogonal` theta is sqrt(q) Q from the Gram–Schmidt QR of the same Gaussian q x p matrix
///   (columns orthonormal, diag R > 0; for q < p the columns past q are left 0);
/// * the `liang` query is x_q = theta^T z_q + omega_q and y_q = beta^T x_q + eps_q.
pub fn iv_sequence_with(rng: &mut Rng, q: usize, p: usize, l: usize, law: &IvLaw) -> IvSequence {
    let mut n = |k: usize| {
        let mut v = vec![0.0; k];
        rng::fill_normal(rng, &mut v);
        v
    };
    let mut theta = n(q * p);
    match law.theta {
        IvTheta::Gaussian => {
            let fro = libm::sqrt(theta.iter().map(|v| v * v).sum::<f64>());
            theta
                .iter_mut()
                .for_each(|v| *v *= libm::sqrt((q * p) as f64) / fro);
        }
        IvTheta::Orthogonal => orthonormal_columns(&mut theta, q, p, libm::sqrt(q as f64)),
    }
    let phi_m = n(p * p);
    let phi = n(p);
    let beta: Vec<f64> = n(p).iter().map(|v| v / libm::sqrt(p as f64)).collect();
    let z = n(l * q);
    let mut u = n(l * p);
    u.iter_mut().for_each(|v| *v *= law.endogeneity);
    let om = n(l * p);
    let eps = n(l);
    let zq = n(q);
    let mut x = vec![0.0; l * p];
    let mut y = vec![0.0; l];
    for t in 0..l {
        for j in 0..p {
            let tz: f64 = (0..q).map(|i| theta[i * p + j] * z[t * q + i]).sum();
            let pu: f64 = (0..p).map(|i| phi_m[i * p + j] * u[t * p + i]).sum();
            x[t * p + j] = tz + pu + om[t * p + j];
        }
        y[t] = (0..p)
            .map(|j| beta[j] * x[t * p + j] + phi[j] * u[t * p + j])
            .sum::<f64>()
            + eps[t];
    }
    let mut xq: Vec<f64> = (0..p)
        .map(|j| (0..q).map(|i| theta[i * p + j] * zq[i]).sum())
        .collect();
    let mut yq_noise = 0.0;
    if law.query == IvQuery::Liang {
        let om_q = n(p);
        xq.iter_mut().zip(&om_q).for_each(|(v, o)| *v += o);
        yq_noise = n(1)[0];
    }
    let mut yq = (0..p).map(|j| beta[j] * xq[j]).sum();
    if law.query == IvQuery::Liang {
        yq += yq_noise;
    }
    IvSequence {
        z,
        x,
        y,
        zq,
        xq,
        yq,
        beta,
        theta,
    }
}

/// Replace the columns of the row-major q x p matrix `m` by `scale` times the orthonormal Q of
/// its QR decomposition with diag R > 0 (modified Gram–Schmidt, each column orthogonalised twice
/// against the ones before it). A column with nothing left (q < p, or a degenerate draw) is 0.
fn orthonormal_columns(m: &mut [f64], q: usize, p: usize, scale: f64) {
    let mut cols: Vec<Vec<f64>> = (0..p)
        .map(|j| (0..q).map(|i| m[i * p + j]).collect())
        .collect();
    for j in 0..p {
        let (done, rest) = cols.split_at_mut(j);
        let v = &mut rest[0];
        for _ in 0..2 {
            for c in done.iter() {
                let dot: f64 = c.iter().zip(v.iter()).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(c).for_each(|(x, a)| *x -= dot * a);
            }
        }
        let norm = libm::sqrt(v.iter().map(|x| x * x).sum::<f64>());
        if norm > 1e-12 {
            v.iter_mut().for_each(|x| *x /= norm);
        } else {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
    }
    for (j, c) in cols.iter().enumerate() {
        for i in 0..q {
            m[i * p + j] = scale * c[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, TaskKind};

    /// The sampler as it was before `IvLaw` (main at the keys' introduction), written out here:
    /// a config without the new keys must draw these bits.
    fn old_sequence(rng: &mut Rng, q: usize, p: usize, l: usize) -> IvSequence {
        let mut n = |k: usize| {
            let mut v = vec![0.0; k];
            rng::fill_normal(rng, &mut v);
            v
        };
        let mut theta = n(q * p);
        let fro = libm::sqrt(theta.iter().map(|v| v * v).sum::<f64>());
        theta
            .iter_mut()
            .for_each(|v| *v *= libm::sqrt((q * p) as f64) / fro);
        let phi_m = n(p * p);
        let phi = n(p);
        let beta: Vec<f64> = n(p).iter().map(|v| v / libm::sqrt(p as f64)).collect();
        let z = n(l * q);
        let u = n(l * p);
        let om = n(l * p);
        let eps = n(l);
        let zq = n(q);
        let mut x = vec![0.0; l * p];
        let mut y = vec![0.0; l];
        for t in 0..l {
            for j in 0..p {
                let tz: f64 = (0..q).map(|i| theta[i * p + j] * z[t * q + i]).sum();
                let pu: f64 = (0..p).map(|i| phi_m[i * p + j] * u[t * p + i]).sum();
                x[t * p + j] = tz + pu + om[t * p + j];
            }
            y[t] = (0..p)
                .map(|j| beta[j] * x[t * p + j] + phi[j] * u[t * p + j])
                .sum::<f64>()
                + eps[t];
        }
        let xq: Vec<f64> = (0..p)
            .map(|j| (0..q).map(|i| theta[i * p + j] * zq[i]).sum())
            .collect();
        let yq = (0..p).map(|j| beta[j] * xq[j]).sum();
        IvSequence {
            z,
            x,
            y,
            zq,
            xq,
            yq,
            beta,
            theta,
        }
    }

    fn iv_config(set: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        for (k, v) in [
            ("task.kind", "iv"),
            ("task.d", "4"),
            ("task.iv_q", "6"),
            ("model.arch", "iv2stage"),
        ]
        .iter()
        .chain(set)
        {
            c.set(k, v).unwrap();
        }
        c.validate().unwrap();
        c
    }

    fn stream(b: u64) -> Rng {
        rng::stream(7, Domain::Eval, 40, b)
    }

    #[test]
    fn iv_default_law_samples_the_old_bits() {
        let cfg = iv_config(&[]);
        let iv = Iv::of_task(&cfg.task);
        assert_eq!(iv.law, IvLaw::default());
        for b in 0..5 {
            let old = old_sequence(&mut stream(b), 6, 4, 40);
            assert_eq!(iv.draw(&mut stream(b), 40), old);
            assert_eq!(iv_sequence(&mut stream(b), 6, 4, 40), old);
        }
        // the batch the trainer fills, too
        let batch = iv
            .sample_batch::<f64>(3, Domain::Train, 2, 0, 4, 30)
            .unwrap();
        let mut old = IvBatch::try_zeros(iv, 4, 30).unwrap();
        for b in 0..4 {
            let s = old_sequence(&mut rng::stream(3, Domain::Train, 2, b as u64), 6, 4, 30);
            let w = 31 * 10;
            iv.stage1(
                &s,
                30,
                &mut old.st1.z[b * w..(b + 1) * w],
                &mut old.st1.y[b * 4..(b + 1) * 4],
            );
            old.y[b * 30..(b + 1) * 30].copy_from_slice(&s.y);
            old.yq[b] = s.yq;
        }
        assert_eq!(batch, old);
    }

    #[test]
    fn iv_keys_are_written_only_off_their_legacy_values() {
        let plain = iv_config(&[]);
        let text = plain.to_toml();
        assert!(
            !text.contains("iv_endogeneity")
                && !text.contains("iv_theta")
                && !text.contains("iv_query"),
            "{text}"
        );
        let set = iv_config(&[
            ("task.iv_endogeneity", "2.5"),
            ("task.iv_theta", "orthogonal"),
            ("task.iv_query", "liang"),
        ]);
        let text = set.to_toml();
        for k in [
            "iv_endogeneity = 2.5",
            "iv_theta = \"orthogonal\"",
            "iv_query = \"liang\"",
        ] {
            assert!(text.contains(k), "{k} in {text}");
        }
        assert_eq!(Config::from_toml(&text).unwrap(), set);
        assert_eq!(
            Iv::of_task(&set.task).law,
            IvLaw {
                endogeneity: 2.5,
                theta: IvTheta::Orthogonal,
                query: IvQuery::Liang
            }
        );
        // refused: q < p with an orthogonal theta, a negative scale, the keys off the iv task
        let mut c = iv_config(&[("task.iv_theta", "orthogonal")]);
        c.set("task.iv_q", "3").unwrap();
        assert!(c.validate().is_err());
        assert!(iv_config(&[]).set("task.iv_endogeneity", "-1").is_err());
        assert!(iv_config(&[]).set("task.iv_theta", "haar").is_err());
        let mut c = Config::default();
        assert_eq!(c.task.kind, TaskKind::Isotropic);
        c.set("task.iv_query", "liang").unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn iv_orthogonal_theta_has_theta_t_theta_q_identity() {
        for (q, p) in [(6, 4), (4, 4), (9, 2)] {
            let law = IvLaw {
                theta: IvTheta::Orthogonal,
                ..IvLaw::default()
            };
            for b in 0..20 {
                let s = iv_sequence_with(&mut stream(b), q, p, 10, &law);
                for a in 0..p {
                    for c in 0..p {
                        let g: f64 = (0..q)
                            .map(|i| s.theta[i * p + a] * s.theta[i * p + c])
                            .sum();
                        let want = if a == c { q as f64 } else { 0.0 };
                        assert!(
                            (g - want).abs() < 1e-12,
                            "q {q} p {p}: (theta^T theta)[{a},{c}] = {g}"
                        );
                    }
                }
                // the same Gaussian draw, orthonormalised: theta's first column is parallel to it
                let g = old_sequence(&mut stream(b), q, p, 10).theta;
                let dot: f64 = (0..q).map(|i| g[i * p] * s.theta[i * p]).sum();
                let ng = libm::sqrt((0..q).map(|i| g[i * p] * g[i * p]).sum::<f64>());
                assert!(
                    (dot - ng * libm::sqrt(q as f64)).abs() < 1e-9 * ng,
                    "column 0 not parallel"
                );
            }
        }
    }

    /// Monte Carlo of the endogeneity: x - theta^T z = c Phi^T u + omega, whose coordinates have
    /// variance c^2 E[(Phi^T Phi)_jj] + 1 = c^2 p + 1 (Phi iid N(0, 1), u ~ N(0, I)); and on one
    /// stream x and y are affine in c (the same draws, u scaled).
    #[test]
    fn iv_endogeneity_scales_the_confounder() {
        let (q, p, l) = (6, 4, 50);
        let law = |c: f64| IvLaw {
            endogeneity: c,
            ..IvLaw::default()
        };
        for c in [0.0, 1.0, 2.0] {
            let mut vals = Vec::new();
            for b in 0..400 {
                let s = iv_sequence_with(&mut stream(b), q, p, l, &law(c));
                // one value per sequence (Phi varies between sequences): the mean square
                let mut m = 0.0;
                for t in 0..l {
                    for j in 0..p {
                        let tz: f64 = (0..q).map(|i| s.theta[i * p + j] * s.z[t * q + i]).sum();
                        m += (s.x[t * p + j] - tz).powi(2) / (l * p) as f64;
                    }
                }
                vals.push(m);
            }
            let n = vals.len() as f64;
            let mean = vals.iter().sum::<f64>() / n;
            let se =
                libm::sqrt(vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n);
            let want = c * c * p as f64 + 1.0;
            assert!(
                (mean - want).abs() < 4.0 * se.max(1e-3),
                "c = {c}: {mean} ± {se}, want {want}"
            );
        }
        for b in 0..5 {
            let s: Vec<IvSequence> = [0.0, 1.0, 3.0]
                .iter()
                .map(|&c| iv_sequence_with(&mut stream(b), q, p, l, &law(c)))
                .collect();
            let resid = |s: &IvSequence, t: usize| -> f64 {
                s.y[t] - (0..p).map(|j| s.beta[j] * s.x[t * p + j]).sum::<f64>()
            };
            for t in 0..l {
                // y - beta^T x = c phi^T u + eps, affine in c
                let (r0, r1, r3) = (resid(&s[0], t), resid(&s[1], t), resid(&s[2], t));
                assert!((r3 - r0 - 3.0 * (r1 - r0)).abs() < 1e-9 * (1.0 + r3.abs()));
                for j in 0..p {
                    let (x0, x1, x3) = (s[0].x[t * p + j], s[1].x[t * p + j], s[2].x[t * p + j]);
                    assert!((x3 - x0 - 3.0 * (x1 - x0)).abs() < 1e-9 * (1.0 + x3.abs()));
                }
            }
            assert_eq!(s[0].z, s[2].z);
            assert_eq!(s[0].yq, s[2].yq);
        }
    }

    /// The liang query keeps omega_q ~ N(0, I_p) in x_q and eps_q ~ N(0, 1) in y_q, on top of the
    /// paper's noise-free query (the same stream: same context, same z_q).
    #[test]
    fn iv_liang_query_keeps_omega_q_and_eps_q() {
        let (q, p, l) = (6, 4, 20);
        let liang = IvLaw {
            query: IvQuery::Liang,
            ..IvLaw::default()
        };
        let (mut sx, mut sy, n) = (0.0, 0.0, 4000);
        let (mut sx2, mut sy2) = (0.0, 0.0);
        for b in 0..n {
            let a = iv_sequence(&mut stream(b), q, p, l);
            let s = iv_sequence_with(&mut stream(b), q, p, l, &liang);
            assert_eq!(
                (&a.z, &a.x, &a.y, &a.zq, &a.theta),
                (&s.z, &s.x, &s.y, &s.zq, &s.theta)
            );
            // the paper's query is noise-free
            let tz: Vec<f64> = (0..p)
                .map(|j| (0..q).map(|i| s.theta[i * p + j] * s.zq[i]).sum())
                .collect();
            assert_eq!(a.xq, tz);
            let bx: f64 = (0..p).map(|j| s.beta[j] * s.xq[j]).sum();
            let om2: f64 = (0..p).map(|j| (s.xq[j] - tz[j]).powi(2)).sum::<f64>() / p as f64;
            let e2 = (s.yq - bx).powi(2);
            sx += om2;
            sy += e2;
            sx2 += om2 * om2;
            sy2 += e2 * e2;
        }
        let nf = n as f64;
        for (s, s2, what) in [(sx, sx2, "omega_q^2"), (sy, sy2, "eps_q^2")] {
            let m = s / nf;
            let se = libm::sqrt((s2 / nf - m * m) / (nf - 1.0));
            assert!((m - 1.0).abs() < 4.0 * se, "{what}: {m} ± {se}, want 1");
        }
    }
}
