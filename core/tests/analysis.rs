//! Circuit analysis on models whose circuits are known by construction.
use icl_core::config::Config;
use icl_core::families::attention::analysis::{analyze, HeadKind};
use icl_core::model::{Model, ModelSpec};

#[test]
fn reduced_heads_are_classified_and_summarised() {
    let mut c = Config::default();
    c.set("model.param", "reduced").unwrap();
    c.set("model.heads", "3").unwrap();
    c.validate().unwrap();
    let spec = ModelSpec::from_config(&c).unwrap();
    let m = Model::<f64>::from_params(spec, vec![0.13, -0.12, 0.002, 3.5, -3.4, 0.01]).unwrap();
    let r = analyze(m.attention().unwrap(), &m.circuits().unwrap());
    let kinds: Vec<HeadKind> = r.heads.iter().map(|h| h.kind).collect();
    assert_eq!(
        kinds,
        [HeadKind::Positive, HeadKind::Negative, HeadKind::Dummy]
    );
    assert!(r.sign_matching);
    assert!((r.gamma - 0.125).abs() < 1e-12);
    assert!((r.mu_plus - 3.5).abs() < 1e-12 && (r.mu_minus + 3.4).abs() < 1e-12);
    assert!((r.omega_homogeneity - 0.13 / 0.12).abs() < 1e-12);
    // eta_eff = 2 C_f gamma mu_+ with C_f = 1 for exp
    assert!((r.eta_eff.unwrap() - 2.0 * 0.125 * 3.5).abs() < 1e-12);
    assert!((r.mu_sum - 0.11).abs() < 1e-12);
    assert!(r
        .heads
        .iter()
        .all(|h| h.offdiag_ratio == 0.0 && h.kq21_norm == 0.0 && h.ov21_norm == 0.0));
}

#[test]
fn full_model_omega_is_reported_on_the_scaled_kq() {
    // Q_h = a I, K_h = I, V_h = I, O_h = m e_{d+1}^T: KQ_eff = a / sqrt(d+1) I, OV_22 = m.
    let mut c = Config::default();
    c.set("model.heads", "2").unwrap();
    c.validate().unwrap();
    let spec = ModelSpec::from_config(&c).unwrap();
    let (h, e) = (2, 6);
    let mut p = vec![0.0; spec.n_params()];
    let (a, m) = ([0.5, -0.4], [2.0, -1.0]);
    for hh in 0..h {
        for i in 0..e {
            p[(hh * e + i) * e + i] = a[hh]; // q_proj
            p[h * e * e + (hh * e + i) * e + i] = 1.0; // k_proj
            p[2 * h * e * e + (hh * e + i) * e + i] = 1.0; // v_proj
        }
        p[3 * h * e * e + hh * e + 5] = m[hh]; // o_proj[0][h E + d]
    }
    let model = Model::<f64>::from_params(spec, p).unwrap();
    let r = analyze(model.attention().unwrap(), &model.circuits().unwrap());
    for hh in 0..h {
        assert!((r.heads[hh].omega - a[hh] / 6f64.sqrt()).abs() < 1e-12);
        assert!((r.heads[hh].mu - m[hh]).abs() < 1e-12);
        // KQ_21 is the y row: a/sqrt(6) on the diagonal entry (5,5) is KQ_22, not KQ_21
        assert!(r.heads[hh].kq21_norm.abs() < 1e-12);
    }
    assert_eq!(r.heads[0].kind, HeadKind::Positive);
    assert_eq!(r.heads[1].kind, HeadKind::Negative);
}
