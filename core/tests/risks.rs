//! Monte Carlo risks from the samplers against the closed forms of He et al. (2025), App. F,
//! and the reduced-model risks against the spec's independently computed table (§5.1).
use icl_core::config::Config;
use icl_core::data::Task;
use icl_core::engine::Runner;
use icl_core::estimator::Estimator;
use icl_core::families::attention::eval::{mc_risk, RiskEstimate};
use icl_core::model::{Model, ModelSpec};

fn cfg(d: usize, l: usize, s2: f64) -> Config {
    let mut c = Config::default();
    c.set("task.d", &d.to_string()).unwrap();
    c.set("task.L", &l.to_string()).unwrap();
    c.set("task.sigma2", &s2.to_string()).unwrap();
    c.validate().unwrap();
    c
}

/// Vanilla GD risk (F.25–F.29): 1 + s2 - 2 eta + eta^2 / L (d (1 + s2) + L + 1).
fn vanilla(d: f64, l: f64, s2: f64, eta: f64) -> f64 {
    1.0 + s2 - 2.0 * eta + eta * eta / l * (d * (1.0 + s2) + l + 1.0)
}

/// Debiased GD risk, exact finite L (derived in icl):
/// 1 + s2 - 2 eta (L-1)/L + eta^2 (L-1)(d(1+s2)+L)/L^2.
fn debiased(d: f64, l: f64, s2: f64, eta: f64) -> f64 {
    1.0 + s2 - 2.0 * eta * (l - 1.0) / l + eta * eta * (l - 1.0) * (d * (1.0 + s2) + l) / (l * l)
}

fn within(r: &RiskEstimate, expect: f64, k: f64, what: &str) {
    let z = (r.risk - expect) / r.stderr;
    assert!(
        z.abs() < k,
        "{what}: MC {:.5} +- {:.5} vs closed form {expect:.5} (z = {z:.2})",
        r.risk,
        r.stderr
    );
}

#[test]
fn gd_risks_match_closed_forms() {
    for &(d, l, s2, eta, seed) in &[
        (5usize, 40usize, 0.1, 0.879121, 1u64),
        (5, 40, 0.1, 1.0, 2),
        (3, 10, 0.5, 1.3, 3),
        (8, 20, 0.0, 0.6, 4),
    ] {
        let c = cfg(d, l, s2);
        let task = Task::new(&c).unwrap();
        let ests = [Estimator::VanillaGd { eta }, Estimator::DebiasedGd { eta }];
        let r = mc_risk::<f64>(&task, l, 60_000, seed, None, &ests).unwrap();
        let (df, lf) = (d as f64, l as f64);
        within(
            &r[0],
            vanilla(df, lf, s2, eta),
            3.0,
            &format!("vanilla d={d} L={l} s2={s2} eta={eta}"),
        );
        within(
            &r[1],
            debiased(df, lf, s2, eta),
            3.0,
            &format!("debiased d={d} L={l} s2={s2} eta={eta}"),
        );
    }
}

#[test]
fn ols_and_bayes_ridge_match_reference_values() {
    let c = cfg(5, 40, 0.1);
    let task = Task::new(&c).unwrap();
    let r = mc_risk::<f64>(
        &task,
        40,
        40_000,
        9,
        None,
        &[Estimator::Ols, Estimator::Ridge { lambda: 0.5 }],
    )
    .unwrap();
    // OLS: sigma^2 (1 + d / (L - d - 1)) = 0.11471
    within(&r[0], 0.1 * (1.0 + 5.0 / 34.0), 3.0, "ols");
    // Bayes (ridge, lambda = d sigma^2): spec MC 0.1146 +- 0.001
    assert!(
        (r[1].risk - 0.1146).abs() < 3.0 * r[1].stderr + 0.001,
        "ridge {:?}",
        r[1]
    );
    assert!(
        r[1].risk < r[0].risk,
        "Bayes ridge must beat OLS on average"
    );
}

fn reduced_model(omega: &[f64], mu: &[f64]) -> Model<f64> {
    let mut c = cfg(5, 40, 0.1);
    c.set("model.param", "reduced").unwrap();
    c.set("model.heads", &omega.len().to_string()).unwrap();
    c.validate().unwrap();
    let spec = ModelSpec::from_config(&c).unwrap();
    let params = omega.iter().chain(mu).copied().collect();
    Model::from_params(spec, params).unwrap()
}

#[test]
fn reduced_models_match_spec_table() {
    // a reference table (MC with 2e5 samples, tolerance +-0.003): L' -> risk
    let task = Task::new(&cfg(5, 40, 0.1)).unwrap();
    let two = reduced_model(&[0.1267, -0.1267], &[3.5006, -3.5006]);
    let one = reduced_model(&[0.52], &[1.42]);
    for &(l, two_ref, one_ref) in &[
        (10usize, 0.5919, 0.8164),
        (40, 0.2435, 0.4047),
        (100, 0.1650, 0.2849),
    ] {
        let mut eng = Runner::<f64>::scalar();
        let r2 = mc_risk(&task, l, 50_000, 21, Some((&two, &mut eng)), &[]).unwrap()[0];
        let r1 = mc_risk(&task, l, 50_000, 22, Some((&one, &mut eng)), &[]).unwrap()[0];
        assert!(
            (r2.risk - two_ref).abs() < 3.0 * r2.stderr + 0.003,
            "2-head L'={l}: {r2:?} vs {two_ref}"
        );
        assert!(
            (r1.risk - one_ref).abs() < 3.0 * r1.stderr + 0.003,
            "1-head L'={l}: {r1:?} vs {one_ref}"
        );
    }
}

#[test]
fn reduced_model_equals_the_reduced_estimator() {
    // The model's reduced parametrisation (through circuits and the engine) and the estimator
    // formula (sum_h mu_h NW(omega_h)) are two independent implementations of eq. (3.2).
    let task = Task::new(&cfg(5, 40, 0.1)).unwrap();
    let m = reduced_model(&[0.3, -0.2, 0.05], &[1.5, -2.0, 0.7]);
    let est = Estimator::Reduced {
        omega: vec![0.3, -0.2, 0.05],
        mu: vec![1.5, -2.0, 0.7],
    };
    let mut eng = Runner::<f64>::scalar();
    let r = mc_risk(&task, 25, 3000, 5, Some((&m, &mut eng)), &[est]).unwrap();
    assert!(
        (r[0].risk - r[1].risk).abs() < 1e-12,
        "{:?} vs {:?}",
        r[0],
        r[1]
    );
}
