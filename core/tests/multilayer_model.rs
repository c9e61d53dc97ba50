//! The multi-layer transformer of the multilayer paper: gradients against finite differences for
//! every option, the mask, linear attention = Algorithm 1 exactly, softmax = centred Algorithm 1
//! for small scores, Claim 1's population operator, the samplers and the IV model's
//! stop-gradient (spec §9 tests 1–6; tests 5, 7, 8 are in theory_multilayer.rs).
use icl_core::config::AttentionKind;
use icl_core::data::Batch;
use icl_core::data::{
    iv::Iv,
    regression::{Cov, Drawn, Regression},
};
use icl_core::families::iv::{self, IvSpec};
use icl_core::families::stack::analysis::{pattern, population_maps};
use icl_core::families::stack::layers::{self, Pass, StackCircuits, StackSpec, Workspace};
use icl_core::families::stack::{StackKernels, StackReference, StackRunner};
use icl_core::fd::rel_error;
use icl_core::rng::{self, Domain};
use icl_core::theory::multilayer as ml;

fn spec(e: usize, heads: usize, layers: usize, looped: bool, att: AttentionKind) -> StackSpec {
    StackSpec {
        e,
        n_out: 1,
        heads,
        layers,
        looped,
        attention: att,
        scale: 0.8,
    }
}

fn normals(seed: u64, n: usize, s: f64) -> Vec<f64> {
    let mut v = vec![0.0; n];
    rng::fill_normal(&mut rng::stream(seed, Domain::Eval, 1, 2), &mut v);
    v.iter().map(|x| x * s).collect()
}

fn batch(seed: u64, n: usize, len: usize, d: usize, no: usize) -> Batch<f64> {
    let mut b = Batch::zeros(n, len, d, no);
    let v = normals(seed, b.z.len() + b.y.len(), 1.0);
    let nz = b.z.len();
    b.z.copy_from_slice(&v[..nz]);
    b.y.copy_from_slice(&v[nz..]);
    let e = d + no;
    for s in 0..n {
        for o in 0..no {
            b.z[(s * (len + 1) + len) * e + d + o] = 0.0;
        }
    }
    b
}

fn param_loss(sp: &StackSpec, p: &[f64], b: &Batch<f64>, grad: Option<&mut [f64]>) -> f64 {
    let mut c = StackCircuits::zeros(sp);
    layers::circuits_forward(sp, p, &mut c);
    let mut g = StackCircuits::zeros(sp);
    let l = StackReference::new().loss_grad(sp, &c, b, &mut g).unwrap();
    if let Some(gr) = grad {
        layers::circuits_backward(sp, p, &g, gr);
    }
    l
}

/// §2 / issue: FD-checked in f64 for looped, non-looped, softmax, linear, T = 1..4.
#[test]
fn parameter_gradients_match_finite_differences_for_every_option() {
    for att in [AttentionKind::Softmax, AttentionKind::Linear] {
        for looped in [true, false] {
            for t in 1..=4 {
                let sp = spec(4, 2, t, looped, att);
                let b = batch(t as u64, 3, 5, 3, 1);
                let p = normals(10 + t as u64, sp.n_params(), 0.4);
                let mut g = vec![0.0; p.len()];
                param_loss(&sp, &p, &b, Some(&mut g));
                let err = rel_error(&mut |x| param_loss(&sp, x, &b, None), &p, &g, 1e-6, 1e-8);
                assert!(
                    err < 1e-6,
                    "{att:?} looped={looped} T={t}: rel error {err:.2e}"
                );
            }
        }
    }
}

/// A multi-output readout (IV stage 1: the last p rows of the query column) and the leave-one-out
/// forward are consistent with finite differences too.
#[test]
fn multi_output_gradient_matches_finite_differences() {
    let sp = StackSpec {
        e: 5,
        n_out: 2,
        heads: 2,
        layers: 2,
        looped: true,
        attention: AttentionKind::Softmax,
        scale: 1.0,
    };
    let b = batch(3, 4, 6, 3, 2);
    let p = normals(4, sp.n_params(), 0.4);
    let mut g = vec![0.0; p.len()];
    param_loss(&sp, &p, &b, Some(&mut g));
    let err = rel_error(&mut |x| param_loss(&sp, x, &b, None), &p, &g, 1e-6, 1e-8);
    assert!(err < 1e-6, "rel error {err:.2e}");
}

/// §9 test 2: perturbing the query leaves every context column of every layer unchanged, bit for
/// bit; yhat is Z^(T)[d+1, L+1].
#[test]
fn the_query_is_never_a_key() {
    for att in [AttentionKind::Softmax, AttentionKind::Linear] {
        let sp = spec(6, 2, 3, true, att);
        let mut c = StackCircuits::zeros(&sp);
        let p = normals(5, sp.n_params(), 0.4);
        layers::circuits_forward(&sp, &p, &mut c);
        let b = batch(6, 1, 9, 5, 1);
        let n = 10;
        let mut w0 = Workspace::default();
        let mut w1 = Workspace::default();
        layers::forward_sequence(&sp, &c, Pass::of(&sp), &b.z, n, &mut w0);
        let mut z = b.z.clone();
        for i in 0..6 {
            z[9 * 6 + i] += 0.7 + i as f64; // x_q and the query's label slot
        }
        layers::forward_sequence(&sp, &c, Pass::of(&sp), &z, n, &mut w1);
        for t in 0..=3 {
            assert_eq!(w0.zs[t][..9 * 6], w1.zs[t][..9 * 6], "{att:?} layer {t}");
        }
        assert_ne!(w0.zs[3][9 * 6 + 5], w1.zs[3][9 * 6 + 5]);
        let mut yhat = [0.0];
        StackRunner::scalar()
            .predict(&sp, &c, Pass::of(&sp), &b, &mut yhat)
            .unwrap();
        assert_eq!(yhat[0], w0.zs[3][9 * 6 + 5]);
    }
}

/// eq.-5 circuits for head h: Phi = diag(omega I_d, 0) (times `g`), Psi = diag(u1 I_d, u2).
fn pattern_circuits(sp: &StackSpec, heads: &[(f64, f64, f64)]) -> StackCircuits<f64> {
    let mut c = StackCircuits::zeros(sp);
    let dd = sp.e;
    for (h, &(w, u1, u2)) in heads.iter().enumerate() {
        for i in 0..dd - 1 {
            c.phi[h * dd * dd + i * dd + i] = w;
            c.psi[h * dd * dd + i * dd + i] = u1;
        }
        c.psi[h * dd * dd + dd * dd - 1] = u2;
    }
    c
}

fn regression_seq(seed: u64, d: usize, l: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Batch<f64>) {
    let task = Regression {
        d,
        sigma: 0.3,
        cov: Cov::Varying {
            lmin: 0.8,
            lmax: 1.2,
        },
        query_noise: false,
        data_law: icl_core::rng::Law::V1,
    };
    let mut b = Batch::zeros(1, l, d, 1);
    task.sample_into(seed, Domain::Eval, 0, 0, &mut b, &mut Vec::new());
    let e = d + 1;
    let x: Vec<f64> = (0..l)
        .flat_map(|t| b.z[t * e..t * e + d].to_vec())
        .collect();
    let y: Vec<f64> = (0..l).map(|t| b.z[t * e + d]).collect();
    let xq = b.z[l * e..l * e + d].to_vec();
    (x, y, xq, b)
}

/// §9 test 3: the looped linear TF with the eq.-5 pattern is Algorithm 1 exactly, with
/// eta_x = -<u1, omega>, eta_y = <u2, omega>, for T = 1..4 and any L.
#[test]
fn linear_attention_is_algorithm_1_exactly() {
    let heads = [(0.9, -0.4, 0.7), (-0.5, 0.3, -0.2)];
    for t in 1..=4 {
        for l in [3, 17, 60] {
            let sp = spec(6, 2, t, true, AttentionKind::Linear);
            let c = pattern_circuits(&sp, &heads);
            let pat = pattern(&c, 0, 5);
            let (x, y, xq, b) = regression_seq(t as u64 * 100 + l as u64, 5, l);
            let mut yhat = [0.0];
            StackRunner::scalar()
                .predict(&sp, &c, Pass::of(&sp), &b, &mut yhat)
                .unwrap();
            let alg = ml::algorithm1_tokens(&x, &y, &xq, pat.eta_x(), pat.eta_y(), t).unwrap();
            let a = alg[t - 1];
            assert!(
                (yhat[0] - a).abs() <= 1e-9 * a.abs().max(1e-3),
                "T={t} L={l}: {} vs {a}",
                yhat[0]
            );
        }
    }
}

/// Algorithm 1 with centred moments (the softmax limit of small scores).
fn centred_alg1(x: &[f64], y: &[f64], xq: &[f64], ex: f64, ey: f64, steps: usize) -> f64 {
    let (l, d) = (y.len(), xq.len());
    let mut xs: Vec<f64> = x.iter().chain(xq).copied().collect();
    let mut ys = y.to_vec();
    ys.push(0.0);
    for _ in 0..steps {
        let xm: Vec<f64> = (0..d)
            .map(|i| (0..l).map(|t| xs[t * d + i]).sum::<f64>() / l as f64)
            .collect();
        let ym = ys[..l].iter().sum::<f64>() / l as f64;
        let mut c = vec![0.0; d * d];
        let mut bv = vec![0.0; d];
        for t in 0..l {
            for i in 0..d {
                bv[i] += (ys[t] - ym) * (xs[t * d + i] - xm[i]) / l as f64;
                for j in 0..d {
                    c[i * d + j] += (xs[t * d + i] - xm[i]) * (xs[t * d + j] - xm[j]) / l as f64;
                }
            }
        }
        let (mut nx, mut ny) = (xs.clone(), ys.clone());
        for t in 0..=l {
            for i in 0..d {
                nx[t * d + i] -= ex * (0..d).map(|j| c[i * d + j] * xs[t * d + j]).sum::<f64>();
            }
            ny[t] += ey * (0..d).map(|j| bv[j] * xs[t * d + j]).sum::<f64>();
        }
        xs = nx;
        ys = ny;
    }
    ys[l]
}

/// §9 test 4: a +-gamma head pair makes the softmax TF centred Algorithm 1 to <= 1e-4 relative;
/// against the uncentred Algorithm 1 the difference is O(1/L) (<= 5 % RMS at L = 120).
#[test]
fn softmax_with_small_scores_is_centred_algorithm_1() {
    let (g, u1, u2) = (1e-3, -0.6, 0.7);
    let sp = spec(6, 2, 3, true, AttentionKind::Softmax);
    let c = pattern_circuits(
        &sp,
        &[
            (g, u1 / (2.0 * g), u2 / (2.0 * g)),
            (-g, -u1 / (2.0 * g), -u2 / (2.0 * g)),
        ],
    );
    let (mut num, mut den) = (0.0, 0.0);
    for s in 0..20 {
        let (x, y, xq, b) = regression_seq(500 + s, 5, 120);
        let mut yhat = [0.0];
        StackRunner::scalar()
            .predict(&sp, &c, Pass::of(&sp), &b, &mut yhat)
            .unwrap();
        let cen = centred_alg1(&x, &y, &xq, -u1, u2, 3);
        assert!(
            (yhat[0] - cen).abs() <= 1e-4 * cen.abs().max(0.05),
            "seq {s}: {} vs centred {cen}",
            yhat[0]
        );
        let unc = ml::algorithm1_tokens(&x, &y, &xq, -u1, u2, 3).unwrap()[2];
        num += (yhat[0] - unc).powi(2);
        den += unc.powi(2);
    }
    let ratio = (num / den).sqrt();
    assert!(ratio <= 0.05, "uncentred RMS difference {ratio:.3}");
}

/// §9 test 6 (Fig. 6): a random-init 3-layer stack on Gaussian tokens approaches Claim 1's affine
/// population map as L grows: mean MSE(L = 800) < MSE(L = 50) / 4.
#[test]
fn claim_1_population_operator() {
    let dd = 6;
    let sp = spec(dd, 2, 3, true, AttentionKind::Softmax);
    let mut c = StackCircuits::zeros(&sp);
    let v = normals(77, c.phi.len() * 2, 0.1);
    let np = c.phi.len();
    c.phi.copy_from_slice(&v[..np]);
    c.psi.copy_from_slice(&v[np..]);
    let mut mses = Vec::new();
    for l in [50usize, 200, 800] {
        let mut tot = 0.0;
        let nseq = 24;
        for s in 0..nseq {
            // mu ~ N(0, 0.25 I), Sigma = B B^T / D + 0.5 I
            let mu = normals(1000 + s, dd, 0.5);
            let bm = normals(2000 + s, dd * dd, 1.0);
            let mut sig = vec![0.0; dd * dd];
            for i in 0..dd {
                for j in 0..dd {
                    sig[i * dd + j] = (0..dd)
                        .map(|k| bm[i * dd + k] * bm[j * dd + k])
                        .sum::<f64>()
                        / dd as f64
                        + if i == j { 0.5 } else { 0.0 };
                }
            }
            let chol = icl_core::data::covariance::cholesky(dd, &sig).unwrap();
            let n = l + 1;
            let g = normals(3000 + s * 7 + l as u64, n * dd, 1.0);
            let mut z = vec![0.0; n * dd];
            for j in 0..n {
                for i in 0..dd {
                    z[j * dd + i] = mu[i]
                        + (0..=i)
                            .map(|k| chol[i * dd + k] * g[j * dd + k])
                            .sum::<f64>();
                }
            }
            let mut ws = Workspace::default();
            layers::forward_sequence(&sp, &c, Pass::of(&sp), &z, n, &mut ws);
            let maps = population_maps(&c, true, 3, &mu, &sig);
            let mut err = 0.0;
            for j in 0..n {
                let mut t = z[j * dd..(j + 1) * dd].to_vec();
                for (a, b) in &maps {
                    t = (0..dd)
                        .map(|i| (0..dd).map(|k| a[i * dd + k] * t[k]).sum::<f64>() + b[i])
                        .collect();
                }
                err += (0..dd)
                    .map(|i| (t[i] - ws.zs[3][j * dd + i]).powi(2))
                    .sum::<f64>()
                    / dd as f64;
            }
            tot += err / n as f64;
        }
        mses.push(tot / nseq as f64);
    }
    assert!(
        mses[1] < mses[0] && mses[2] < mses[1],
        "MSE not decreasing in L: {mses:?}"
    );
    assert!(
        mses[2] < mses[0] / 4.0,
        "MSE(800) = {} vs MSE(50) = {}",
        mses[2],
        mses[0]
    );
}

/// §9 test 1: U orthogonal, Sigma's eigenvalues in [lmin, lmax], E tr Sigma = d, and Cov(x) = Sigma.
#[test]
fn varying_covariance_sampler() {
    let d = 5;
    let mut r = rng::stream(3, Domain::Eval, 0, 0);
    let u = ml::haar_orthogonal(&mut r, d);
    for i in 0..d {
        for j in 0..d {
            let s: f64 = (0..d).map(|k| u[i * d + k] * u[j * d + k]).sum();
            assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-10);
        }
    }
    let task = Regression {
        d,
        sigma: 0.3,
        cov: Cov::Varying {
            lmin: 0.8,
            lmax: 1.2,
        },
        query_noise: true,
        data_law: icl_core::rng::Law::V1,
    };
    let mut tr = 0.0;
    let n = 10_000;
    let (mut z, mut y, mut nb) = (vec![0.0f64; 2 * (d + 1)], [0.0], Vec::new());
    for s in 0..n {
        let mut dr = Drawn::default();
        task.sample(
            &mut rng::stream(9, Domain::Eval, 0, s),
            1,
            &mut nb,
            &mut z,
            &mut y,
            Some(&mut dr),
        );
        let m = nalgebra::DMatrix::from_row_slice(d, d, &dr.sigma);
        for ev in m.symmetric_eigenvalues().iter() {
            assert!(*ev > 0.8 - 1e-9 && *ev < 1.2 + 1e-9, "eigenvalue {ev}");
        }
        tr += (0..d).map(|i| dr.sigma[i * d + i]).sum::<f64>();
    }
    // sd of tr Sigma = sqrt(5 * 0.4^2 / 12) = 0.258, of the mean 0.0026
    assert!(
        (tr / n as f64 - 5.0).abs() < 0.02,
        "mean trace {}",
        tr / n as f64
    );
    let l = 100_000;
    let mut z = vec![0.0f64; (l + 1) * (d + 1)];
    let mut dr = Drawn::default();
    task.sample(
        &mut rng::stream(4, Domain::Eval, 0, 0),
        l,
        &mut nb,
        &mut z,
        &mut y,
        Some(&mut dr),
    );
    for i in 0..d {
        for j in 0..d {
            let c: f64 = (0..l)
                .map(|t| z[t * (d + 1) + i] * z[t * (d + 1) + j])
                .sum::<f64>()
                / l as f64;
            assert!(
                (c - dr.sigma[i * d + j]).abs() < 0.02,
                "Cov({i},{j}) {c} vs {}",
                dr.sigma[i * d + j]
            );
        }
    }
}

fn iv_spec() -> IvSpec {
    let iv = Iv::new(3, 2);
    let st = |e, n_out, layers| StackSpec {
        e,
        n_out,
        heads: 2,
        layers,
        looped: true,
        attention: AttentionKind::Softmax,
        scale: 1.0,
    };
    IvSpec {
        iv,
        st1: st(5, 2, 1),
        st2: st(3, 1, 2),
    }
}

/// The IV model's gradient is the FD gradient of stage-1 loss + stage-2 loss with sg[xhat]:
/// stage 1's part is the FD gradient of its own term only.
#[test]
fn iv_stop_gradient() {
    let sp = iv_spec();
    let b = sp
        .iv
        .sample_batch::<f64>(5, Domain::Eval, 0, 0, 3, 7)
        .unwrap();
    let p = normals(8, sp.n_params(), 0.4);
    let mut g = vec![0.0; p.len()];
    iv::loss_grad(&sp, &p, &b, &mut StackRunner::scalar(), &mut g).unwrap();
    let n1 = sp.st1.n_params();
    // stage 1: its own loss
    let mut f1 = |x: &[f64]| {
        let mut c = StackCircuits::zeros(&sp.st1);
        layers::circuits_forward(&sp.st1, x, &mut c);
        StackReference::new()
            .loss_grad(&sp.st1, &c, &b.st1, &mut StackCircuits::zeros(&sp.st1))
            .unwrap()
    };
    let e1 = rel_error(&mut f1, &p[..n1], &g[..n1], 1e-6, 1e-8);
    assert!(e1 < 1e-6, "stage 1: {e1:.2e}");
    // stage 2: the total loss with stage 1 fixed
    let mut f2 = |x: &[f64]| {
        let mut q = p.clone();
        q[n1..].copy_from_slice(x);
        let mut gg = vec![0.0; q.len()];
        iv::loss_grad(&sp, &q, &b, &mut StackRunner::scalar(), &mut gg)
            .unwrap()
            .0
    };
    let e2 = rel_error(&mut f2, &p[n1..], &g[n1..], 1e-6, 1e-8);
    assert!(e2 < 1e-6, "stage 2: {e2:.2e}");
    // and the total loss does depend on stage 1 through xhat (so the stop-gradient is real)
    let full = icl_core::fd::central_diff(&mut f2_total(&sp, &b), &p, 1e-6);
    let diff: f64 = full[..n1]
        .iter()
        .zip(&g[..n1])
        .map(|(a, b)| (a - b).abs())
        .sum();
    assert!(diff > 1e-6, "stage 2's loss does not depend on stage 1?");
}

fn f2_total<'a>(
    sp: &'a IvSpec,
    b: &'a icl_core::data::iv::IvBatch<f64>,
) -> impl FnMut(&[f64]) -> f64 + 'a {
    move |x: &[f64]| {
        let mut gg = vec![0.0; x.len()];
        iv::loss_grad(sp, x, b, &mut StackRunner::scalar(), &mut gg)
            .unwrap()
            .0
    }
}
