//! Attention temperature and test-time shifts as evaluation options (temperature paper, issue 12):
//! tau = 1 without a shift is the plain evaluation bit for bit; a model at temperature tau equals
//! an independent forward with the logits divided by tau (one layer and multi-layer); the shifted
//! samplers have the stated moments; bad input is a typed error.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]
use icl_core::config::{Config, ShiftConfig};
use icl_core::data::{task::TaskVector, Batch, Task};
use icl_core::families::attention::eval::{mc_risk, mc_risk_tempered, select_temperature};
use icl_core::families::stack::eval::{self as ml_eval, Options, Temper};
use icl_core::families::stack::layers::{circuits_forward, Pass, StackCircuits};
use icl_core::families::stack::StackRunner;
use icl_core::rng::{self, Domain};
use icl_core::tempered::{parse_taus, select_tau, Tau};
use icl_core::{Error, Model, Runner};

fn cfg(sets: &[(&str, &str)]) -> Config {
    let mut c = Config::default();
    c.set("train.dtype", "f64").unwrap();
    for (k, v) in sets {
        c.set(k, v).unwrap();
    }
    c.validate().unwrap();
    c
}

/// A one-layer model with logits of order 1 (Gaussian init), in f64.
fn one_layer(extra: &[(&str, &str)]) -> (Config, Model<f64>) {
    let mut s = vec![("model.init", "gaussian"), ("model.init_scale", "0.6")];
    s.extend_from_slice(extra);
    let c = cfg(&s);
    let m = Model::<f64>::init(&c).unwrap();
    (c, m)
}

fn transformer(layers: &str, attention: &str) -> (Config, Model<f64>) {
    let c = cfg(&[
        ("task.kind", "varying"),
        ("task.d", "4"),
        ("task.L", "12"),
        ("model.arch", "transformer"),
        ("model.layers", layers),
        ("model.attention", attention),
        ("model.heads", "2"),
        ("model.init", "gaussian"),
        ("model.init_scale", "0.4"),
    ]);
    let m = Model::<f64>::init(&c).unwrap();
    (c, m)
}

#[test]
fn tau_one_without_shift_is_the_plain_evaluation_bit_for_bit() {
    let (c, m) = one_layer(&[]);
    let task = Task::new(&c).unwrap();
    let est = icl_core::estimator::Estimator::Ridge { lambda: 0.5 };
    let mut r = Runner::scalar();
    let plain = mc_risk(
        &task,
        20,
        700,
        3,
        Some((&m, &mut r)),
        std::slice::from_ref(&est),
    )
    .unwrap();
    let shifted = task.shifted(&ShiftConfig::default()).unwrap();
    let t = mc_risk_tempered(
        &shifted,
        20,
        700,
        3,
        Some((&m, &mut r)),
        &[1.0, 0.5],
        &[est],
    )
    .unwrap();
    assert_eq!(t[0], plain[0]);
    assert_eq!(t[2], plain[1]);
    assert_ne!(t[1].risk, plain[0].risk);
    // the transformer evaluation too, row by row
    let (c, m) = transformer("2", "softmax");
    let o = Options {
        lens: vec![8, 16],
        samples: 300,
        seed: 5,
        lambda: None,
        stack: 1,
        layers_out: true,
        alignment: 0,
    };
    let a = ml_eval::regression(&c, &m, &mut StackRunner::scalar(), &o).unwrap();
    let t = Temper {
        taus: vec![Tau::Value(1.0)],
        ..Temper::default()
    };
    let b = ml_eval::regression_at(&c, &m, &mut StackRunner::scalar(), &o, &t).unwrap();
    assert_eq!(a.rows.len(), b.rows.len());
    for (x, y) in a.rows.iter().zip(&b.rows) {
        assert_eq!(
            (&x.estimator, x.len, x.risk, x.stderr),
            (&y.estimator, y.len, y.risk, y.stderr)
        );
    }
}

/// Independent one-layer forward with the logits divided by tau (He et al. eq. (2.2), exp
/// activation): s_l = z_l^T KQ z_q, w = softmax(s / tau), yhat = OV sum_l w_l z_l.
fn reference_one_layer(m: &Model<f64>, seq: &[f64], len: usize, tau: f64) -> Vec<f64> {
    let sp = m.attention().unwrap();
    let (e, no) = (sp.e(), sp.n_out);
    let c = m.circuits().unwrap();
    let nk = sp.keys(len);
    let zq = &seq[len * e..(len + 1) * e];
    let mut y = vec![0.0; no];
    for h in 0..sp.heads {
        let kq = c.kq_head(h);
        let ov = c.ov_head(h);
        let s: Vec<f64> = (0..nk)
            .map(|l| {
                let z = &seq[l * e..(l + 1) * e];
                let mut acc = 0.0;
                for i in 0..e {
                    for j in 0..e {
                        acc += z[i] * kq[i * e + j] * zq[j];
                    }
                }
                acc / tau
            })
            .collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ex: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let tot: f64 = ex.iter().sum();
        for o in 0..no {
            for l in 0..nk {
                let z = &seq[l * e..(l + 1) * e];
                let a: f64 = (0..e).map(|i| ov[o * e + i] * z[i]).sum();
                y[o] += ex[l] / tot * a;
            }
        }
    }
    y
}

#[test]
fn one_layer_temperature_equals_a_forward_with_scaled_logits() {
    for extra in [
        vec![],
        vec![("model.heads", "3"), ("model.param", "merged")],
    ] {
        let (c, m) = one_layer(&extra);
        let task = Task::new(&c).unwrap();
        let b: Batch<f64> = task.sample_batch(7, Domain::Eval, 15, 40, 15);
        let mut r = Runner::scalar();
        for tau in [0.25, 1.0, 3.7] {
            let mut out = vec![0.0; b.n];
            r.predict(
                m.attention().unwrap(),
                &m.circuits().unwrap().tempered(tau).unwrap(),
                &b,
                &mut out,
            )
            .unwrap();
            let mut spread = 0.0f64;
            for s in 0..b.n {
                let want = reference_one_layer(&m, b.seq(s), b.len, tau)[0];
                assert!(
                    (out[s] - want).abs() <= 1e-12 * (1.0 + want.abs()),
                    "tau {tau}: {} vs {want}",
                    out[s]
                );
                spread =
                    spread.max((want - reference_one_layer(&m, b.seq(s), b.len, 1.0)[0]).abs());
            }
            // the temperature matters at these logits (the test could fail)
            assert!(tau == 1.0 || spread > 1e-3, "tau {tau} changes nothing");
        }
    }
    // linear attention: tau scales the attention output, s_l / (tau L_0) (spec §2.3)
    let (c, m) = one_layer(&[("model.attention", "linear")]);
    let b: Batch<f64> = Task::new(&c)
        .unwrap()
        .sample_batch(8, Domain::Eval, 9, 10, 9);
    let mut r = Runner::scalar();
    let (mut y1, mut y2) = (vec![0.0; 10], vec![0.0; 10]);
    r.predict(m.attention().unwrap(), &m.circuits().unwrap(), &b, &mut y1)
        .unwrap();
    r.predict(
        m.attention().unwrap(),
        &m.circuits().unwrap().tempered(2.5).unwrap(),
        &b,
        &mut y2,
    )
    .unwrap();
    for (a, b) in y1.iter().zip(&y2) {
        assert!((a / 2.5 - b).abs() <= 1e-12 * (1.0 + a.abs()));
    }
}

/// Independent T-layer forward (multilayer paper eq. (3)) with every logit divided by tau: per
/// layer Z <- Z + sum_h Psi_h Z softmax_i(z_i^T Phi_h z_j / tau), keys i < L (the query is never a
/// key), every column j updated.
fn reference_stack(
    phi: &[f64],
    psi: &[f64],
    sets: usize,
    heads: usize,
    layers: usize,
    dd: usize,
    seq: &[f64],
    len: usize,
    tau: f64,
) -> f64 {
    let n = len + 1;
    let mut z = seq.to_vec();
    for t in 0..layers {
        let set = if sets == 1 { 0 } else { t };
        let mut upd = vec![0.0; n * dd];
        for h in 0..heads {
            let off = (set * heads + h) * dd * dd;
            let (f, p) = (&phi[off..off + dd * dd], &psi[off..off + dd * dd]);
            for j in 0..n {
                let s: Vec<f64> = (0..len)
                    .map(|i| {
                        let mut acc = 0.0;
                        for a in 0..dd {
                            for b in 0..dd {
                                acc += z[i * dd + a] * f[a * dd + b] * z[j * dd + b];
                            }
                        }
                        acc / tau
                    })
                    .collect();
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let ex: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                let tot: f64 = ex.iter().sum();
                for r in 0..dd {
                    for i in 0..len {
                        let pz: f64 = (0..dd).map(|b| p[r * dd + b] * z[i * dd + b]).sum();
                        upd[j * dd + r] += ex[i] / tot * pz;
                    }
                }
            }
        }
        z.iter_mut().zip(&upd).for_each(|(a, u)| *a += u);
    }
    z[len * dd + dd - 1]
}

#[test]
fn transformer_temperature_equals_a_forward_with_scaled_logits() {
    for layers in ["1", "3"] {
        let (c, m) = transformer(layers, "softmax");
        let icl_core::model::Net::Stack(sp) = &m.spec.net else {
            panic!("not a stack")
        };
        let mut circ = StackCircuits::zeros(sp);
        circuits_forward(sp, &m.params, &mut circ);
        let task = Task::new(&c).unwrap();
        let b: Batch<f64> = task.sample_batch(4, Domain::Eval, 12, 12, 12);
        let mut r = StackRunner::scalar();
        for tau in [0.3, 1.0, 4.0] {
            let mut out = vec![0.0; b.n];
            r.predict(sp, &circ.tempered(tau).unwrap(), Pass::of(sp), &b, &mut out)
                .unwrap();
            for s in 0..b.n {
                let want = reference_stack(
                    &circ.phi,
                    &circ.psi,
                    sp.sets(),
                    sp.heads,
                    sp.layers,
                    sp.e,
                    b.seq(s),
                    b.len,
                    tau,
                );
                assert!(
                    (out[s] - want).abs() <= 1e-11 * (1.0 + want.abs()),
                    "T={layers} tau {tau}: {} vs {want}",
                    out[s]
                );
            }
        }
    }
}

#[test]
fn opt_search_finds_the_minimum_and_never_loses_to_tau_one() {
    // a known curve: minimum at tau = 2.7
    let (t, f) = select_tau(|t: f64| Ok((t.ln() - 2.7f64.ln()).powi(2) + 1.0)).unwrap();
    assert!((t - 2.7).abs() < 1e-5, "{t}");
    assert!((f - 1.0).abs() < 1e-9);
    // a minimum at the edge of the range stays at the edge
    let (t, _) = select_tau(|t: f64| Ok(t)).unwrap();
    assert!((t - icl_core::tempered::OPT_MIN).abs() < 1e-6, "{t}");
    // on a model: the held-out risk at the chosen tau is <= the held-out risk at tau = 1
    let (c, m) = one_layer(&[]);
    let sh = {
        let mut s = ShiftConfig::default();
        s.set("x_cov", "3").unwrap();
        s
    };
    let task = Task::new(&c).unwrap().shifted(&sh).unwrap();
    let mut r = Runner::scalar();
    let (tau, risk) = select_temperature(&task, 20, 400, 1, &m, &mut r).unwrap();
    let mut hb: Batch<f64> = Batch::zeros(400, 20, 5, 1);
    task.sample_into(1, Domain::Tune, 20, 0, &mut hb, &mut Vec::new());
    let mut p = vec![0.0; 400];
    r.predict(m.attention().unwrap(), &m.circuits().unwrap(), &hb, &mut p)
        .unwrap();
    let r1 = p
        .iter()
        .zip(&hb.y)
        .map(|(a, y)| (a - y) * (a - y))
        .sum::<f64>()
        / 400.0;
    assert!(risk <= r1 + 1e-12, "tau {tau}: {risk} > {r1}");
    // the held-out streams are not the evaluation streams
    let mut eb: Batch<f64> = Batch::zeros(4, 20, 5, 1);
    task.sample_into(1, Domain::Eval, 20, 0, &mut eb, &mut Vec::new());
    assert_ne!(eb.z[..10], hb.z[..10]);
}

/// Mean and covariance of the rows of `v` (n x d).
fn moments(v: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (v.len() / d) as f64;
    let mut m = vec![0.0; d];
    for r in v.chunks(d) {
        for i in 0..d {
            m[i] += r[i] / n;
        }
    }
    let mut c = vec![0.0; d * d];
    for r in v.chunks(d) {
        for i in 0..d {
            for j in 0..d {
                c[i * d + j] += (r[i] - m[i]) * (r[j] - m[j]) / n;
            }
        }
    }
    (m, c)
}

#[test]
fn shifted_samplers_have_the_stated_moments() {
    let d = 3;
    let c = cfg(&[("task.d", "3"), ("task.sigma2", "0.25")]);
    let mut sh = ShiftConfig::default();
    sh.set("x_cov", "[2.0, 0.6, 0.3, 0.6, 1.0, 0.0, 0.3, 0.0, 0.5]")
        .unwrap();
    sh.set("x_mean", "2e1").unwrap();
    sh.set("w_cov", "[4, 1, 0.25]").unwrap();
    sh.set("w_mean", "[0.5, -1, 0]").unwrap();
    sh.set("noise", "1.5").unwrap();
    let task = Task::new(&c).unwrap().shifted(&sh).unwrap();
    let (n, len) = (20_000, 4);
    let (mut xs, mut ws, mut res) = (Vec::new(), Vec::new(), Vec::new());
    let mut normals = Vec::new();
    let e = d + 1;
    for s in 0..n {
        let mut r = rng::stream(9, Domain::Eval, 1, s);
        let (mut z, mut y, mut w) = (vec![0.0; (len + 1) * e], vec![0.0], vec![0.0; d]);
        task.sample_sequence_as(
            &mut r,
            len,
            &mut normals,
            &mut z,
            &mut y,
            TaskVector::Random,
            &mut w,
        );
        for l in 0..len {
            let x = &z[l * e..l * e + d];
            xs.extend_from_slice(x);
            res.push(z[l * e + d] - x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>());
        }
        ws.extend_from_slice(&w);
    }
    let sx = [2.0, 0.6, 0.3, 0.6, 1.0, 0.0, 0.3, 0.0, 0.5];
    let (mx, cx) = moments(&xs, d);
    // 80000 draws (correlated within a sequence only through w, not x): SE of a mean <= 0.005,
    // of a covariance entry <= 0.01
    for i in 0..d {
        let want = if i == 0 { 2.0 } else { 0.0 };
        assert!((mx[i] - want).abs() < 0.03, "x mean {i}: {}", mx[i]);
    }
    for k in 0..d * d {
        assert!(
            (cx[k] - sx[k]).abs() < 0.05,
            "x cov {k}: {} vs {}",
            cx[k],
            sx[k]
        );
    }
    let (mw, cw) = moments(&ws, d);
    let (wm, wd) = ([0.5, -1.0, 0.0], [4.0, 1.0, 0.25]);
    for i in 0..d {
        // 20000 task vectors: SE of the mean sqrt(4/20000) = 0.014, of the variance 4 sqrt(2/20000) = 0.04
        assert!((mw[i] - wm[i]).abs() < 0.07, "w mean {i}: {}", mw[i]);
        assert!(
            (cw[i * d + i] - wd[i]).abs() < 0.2 * wd[i],
            "w var {i}: {}",
            cw[i * d + i]
        );
    }
    let (mr, vr) = moments(&res, 1);
    assert!(
        mr[0].abs() < 0.03 && (vr[0] - 2.25).abs() < 0.06,
        "noise {mr:?} {vr:?}"
    );

    // a scale of the training covariance, and of the training prior (beta ~ N(0, I/d))
    let mut sh = ShiftConfig::default();
    sh.set("x_cov", "3").unwrap();
    sh.set("w_cov", "2").unwrap();
    let task = Task::new(&cfg(&[("task.d", "3")]))
        .unwrap()
        .shifted(&sh)
        .unwrap();
    let (mut xs, mut ws) = (Vec::new(), Vec::new());
    for s in 0..n {
        let mut r = rng::stream(10, Domain::Eval, 1, s);
        let (mut z, mut y, mut w) = (vec![0.0; (len + 1) * e], vec![0.0], vec![0.0; d]);
        task.sample_sequence_as(
            &mut r,
            len,
            &mut normals,
            &mut z,
            &mut y,
            TaskVector::Random,
            &mut w,
        );
        xs.extend_from_slice(&z[..d]);
        ws.extend_from_slice(&w);
    }
    let (_, cx) = moments(&xs, d);
    let (_, cw) = moments(&ws, d);
    for i in 0..d {
        assert!((cx[i * d + i] - 3.0).abs() < 0.15, "{}", cx[i * d + i]);
        assert!(
            (cw[i * d + i] - 2.0 / 3.0).abs() < 0.04,
            "{}",
            cw[i * d + i]
        );
    }

    // the multilayer paper's varying regression: x_cov = 3 triples E[x x^T] (E[lambda] = 1),
    // beta ~ N(mu, I), noise sigma
    let c = cfg(&[
        ("task.kind", "varying"),
        ("task.d", "3"),
        ("model.arch", "transformer"),
    ]);
    let mut sh = ShiftConfig::default();
    sh.set("x_cov", "3").unwrap();
    sh.set("x_mean", "[0, 0, -1]").unwrap();
    sh.set("noise", "0.5").unwrap();
    let task = Task::new(&c).unwrap().shifted(&sh).unwrap();
    let b: Batch<f64> = task.sample_batch(11, Domain::Eval, 1, 20_000, 1);
    let x0: Vec<f64> = (0..b.n).flat_map(|s| b.seq(s)[..d].to_vec()).collect();
    let (m, cv) = moments(&x0, d);
    assert!((m[2] + 1.0).abs() < 0.05 && m[0].abs() < 0.05, "{m:?}");
    for i in 0..d {
        assert!((cv[i * d + i] - 3.0).abs() < 0.15, "{}", cv[i * d + i]);
    }
}

#[test]
fn bad_temperatures_and_shifts_are_typed_errors() {
    for bad in ["0", "-1", "nan", "inf", "abc", "", "1,,2"] {
        assert!(parse_taus(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        parse_taus("0.5, 1,opt").unwrap(),
        vec![Tau::Value(0.5), Tau::Value(1.0), Tau::Opt]
    );
    let (_, m) = one_layer(&[]);
    assert!(matches!(
        m.circuits().unwrap().tempered(0.0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        m.circuits().unwrap().tempered(f64::NAN),
        Err(Error::NonFinite(_))
    ));
    let mut s = ShiftConfig::default();
    assert!(matches!(s.set("x_covv", "3"), Err(Error::UnknownKey(_))));
    assert!(matches!(s.set("len", "3"), Err(Error::UnknownKey(_))));
    assert!(s.set("x_cov", "0").is_err());
    assert!(s.set("x_cov", "-2").is_err());
    assert!(matches!(s.set("x_cov", "nan"), Err(Error::NonFinite(_))));
    assert!(s.set("noise", "-1").is_err());
    assert!(s.set("x_mean", "2").is_err(), "a bare number is ambiguous");
    assert!(s.is_empty(), "failed sets leave the config unchanged");
    let task = Task::new(&cfg(&[("task.d", "2")])).unwrap();
    for (k, v) in [
        ("x_cov", "[1, 2, 2, 1]"),   // symmetric, not positive definite
        ("x_cov", "[1, 0.5, 0, 1]"), // not symmetric
        ("x_cov", "[1, -1]"),        // a diagonal with a negative entry
        ("x_cov", "[1, 0, 1]"),      // neither d nor d*d entries
        ("w_cov", "[1, 3, 3, 1]"),
        ("x_mean", "1e3"), // e_3 does not exist for d = 2
        ("w_mean", "[1, 2, 3]"),
    ] {
        let mut s = ShiftConfig::default();
        s.set(k, v).unwrap();
        assert!(
            matches!(task.shifted(&s), Err(Error::InvalidConfig(_))),
            "{k} = {v}"
        );
    }
    // a task without a shift rule
    let eigs = Task::new(&cfg(&[("task.kind", "eigs"), ("task.eigs", "[1, 0.5]")])).unwrap();
    let mut s = ShiftConfig::default();
    s.set("x_cov", "2").unwrap();
    assert!(matches!(eigs.shifted(&s), Err(Error::Unsupported(_))));
}
