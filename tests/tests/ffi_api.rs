//! The C API gives the library's numbers: sampled batches are the trainer's batches, gradients
//! match finite differences (f64), a trainer stepped through the API equals `icl_core`'s
//! `Trainer` bit for bit (also from several threads at once), checkpoints round-trip, risks equal
//! `mc_risk`, circuits of the reduced model are its parameters, and the theory functions give the
//! closed forms of He et al. (2025) (values computed here by hand).
use icl_core::config::Config;
use icl_core::engine::{Runner, ScalarEngine};
use icl_core::families::attention::eval::mc_risk;
use icl_core::fd::rel_error;
use icl_core::optim::Optimizer;
use icl_core::rng::Domain;
use icl_core::train::{loss_and_grad, Trainer};
use icl_core::{Batch, Model, Task};
use icl_ffi::*;

mod ffi_common;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn check(s: icl_status) {
    assert_eq!(
        s,
        icl_status::ICL_OK,
        "{}",
        unsafe { CStr::from_ptr(icl_last_error()) }.to_string_lossy()
    );
}

/// A config handle and the same config in Rust.
fn config(sets: &[(&str, &str)]) -> (*mut icl_config, Config) {
    let mut h = null_mut();
    check(unsafe { icl_config_preset(c("quick").as_ptr(), &mut h) });
    let mut cfg = icl_core::presets::preset("quick").unwrap();
    for (k, v) in sets {
        check(unsafe { icl_config_set(h, c(k).as_ptr(), c(v).as_ptr()) });
        cfg.set(k, v).unwrap();
    }
    cfg.validate().unwrap();
    (h, cfg)
}

fn dims_of(m: *const icl_model) -> icl_dims {
    let mut d = icl_dims::default();
    check(unsafe { icl_model_dims(m, &mut d) });
    d
}

fn params_of(m: *const icl_model) -> Vec<f64> {
    let n = dims_of(m).n_params;
    let mut p = vec![0.0; n];
    check(unsafe { icl_model_get_params(m, p.as_mut_ptr(), n) });
    p
}

fn trainer_params(t: *const icl_trainer) -> Vec<f64> {
    let mut d = icl_dims::default();
    check(unsafe { icl_trainer_dims(t, &mut d) });
    let mut p = vec![0.0; d.n_params];
    check(unsafe { icl_trainer_get_params(t, p.as_mut_ptr(), d.n_params) });
    p
}

fn sample(
    task: *const icl_task,
    seed: u64,
    domain: u32,
    step: u64,
    n: usize,
    len: usize,
    e: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (mut z, mut y) = (vec![0.0; n * (len + 1) * e], vec![0.0; n * (e - 5)]);
    check(unsafe {
        icl_task_sample(
            task,
            seed,
            domain,
            step,
            n,
            len,
            z.as_mut_ptr(),
            z.len(),
            y.as_mut_ptr(),
            y.len(),
        )
    });
    (z, y)
}

#[test]
fn sampled_batches_are_the_trainers_batches() {
    let sets = [("task.L", "9"), ("train.batch", "8"), ("train.seed", "31")];
    let (h, cfg) = config(&sets);
    let (mut task, mut model, mut tr) = (null_mut(), null_mut(), null_mut());
    check(unsafe { icl_task_new(h, &mut task) });
    check(unsafe { icl_model_new(h, &mut model) });
    check(unsafe { icl_model_set_engine(model, c("scalar").as_ptr()) });
    check(unsafe { icl_trainer_new(h, c("scalar").as_ptr(), &mut tr) });
    // The batch of step 0, through the API and from the core sampler.
    let (z, y) = sample(task, 31, ICL_DOMAIN_TRAIN, 0, 8, 9, 6);
    let b: Batch<f64> = Task::new(&cfg)
        .unwrap()
        .sample_batch(31, Domain::Train, 0, 8, 9);
    assert_eq!(z, b.z);
    assert_eq!(y, b.y);
    // The loss of the untrained model on it is the trainer's first loss, bit for bit.
    let np = dims_of(model).n_params;
    let (mut loss, mut grad) = (0.0, vec![0.0; np]);
    check(unsafe {
        icl_model_loss_grad(
            model,
            8,
            9,
            z.as_ptr(),
            z.len(),
            y.as_ptr(),
            y.len(),
            &mut loss,
            grad.as_mut_ptr(),
            np,
        )
    });
    let mut losses = [0.0; 1];
    check(unsafe { icl_trainer_train(tr, 1, losses.as_mut_ptr(), 1, null_mut()) });
    assert_eq!(loss.to_bits(), losses[0].to_bits());
    // predict(x, y, xq) is predict_batch(z) on the same problems.
    let e = 6;
    let (mut x, mut yc, mut xq) = (vec![], vec![], vec![]);
    for s in 0..8 {
        let q = &z[s * 10 * e..(s + 1) * 10 * e];
        for l in 0..9 {
            x.extend_from_slice(&q[l * e..l * e + 5]);
            yc.push(q[l * e + 5]);
        }
        xq.extend_from_slice(&q[9 * e..9 * e + 5]);
    }
    let (mut p1, mut p2) = (vec![0.0; 8], vec![0.0; 8]);
    check(unsafe {
        icl_model_predict(
            model,
            8,
            9,
            x.as_ptr(),
            x.len(),
            yc.as_ptr(),
            yc.len(),
            xq.as_ptr(),
            xq.len(),
            p1.as_mut_ptr(),
            8,
        )
    });
    check(unsafe { icl_model_predict_batch(model, 8, 9, z.as_ptr(), z.len(), p2.as_mut_ptr(), 8) });
    assert_eq!(p1, p2);
    unsafe {
        icl_trainer_free(tr);
        icl_model_free(model);
        icl_task_free(task);
        icl_config_free(h);
    }
}

#[test]
fn gradient_matches_finite_differences_in_f64() {
    for param in ["full", "merged", "reduced"] {
        let sets = [
            ("task.L", "7"),
            ("train.dtype", "f64"),
            ("model.param", param),
            ("model.init", "gaussian"),
            ("model.init_scale", "0.4"),
        ];
        let (h, _) = config(&sets);
        let (mut task, mut model) = (null_mut(), null_mut());
        check(unsafe { icl_task_new(h, &mut task) });
        check(unsafe { icl_model_new(h, &mut model) });
        assert_eq!(dims_of(model).is_f64, 1);
        let (z, y) = sample(task, 3, ICL_DOMAIN_EVAL, 0, 6, 7, 6);
        let p0 = params_of(model);
        let np = p0.len();
        let mut grad = vec![0.0; np];
        let mut loss = 0.0;
        check(unsafe {
            icl_model_loss_grad(
                model,
                6,
                7,
                z.as_ptr(),
                z.len(),
                y.as_ptr(),
                y.len(),
                &mut loss,
                grad.as_mut_ptr(),
                np,
            )
        });
        let mut f = |p: &[f64]| {
            let (mut l, mut g) = (0.0, vec![0.0; np]);
            check(unsafe { icl_model_set_params(model, p.as_ptr(), np) });
            check(unsafe {
                icl_model_loss_grad(
                    model,
                    6,
                    7,
                    z.as_ptr(),
                    z.len(),
                    y.as_ptr(),
                    y.len(),
                    &mut l,
                    g.as_mut_ptr(),
                    np,
                )
            });
            l
        };
        let err = rel_error(&mut f, &p0, &grad, 1e-6, 1e-8);
        assert!(err < 1e-6, "{param}: relative gradient error {err}");
        unsafe {
            icl_model_free(model);
            icl_task_free(task);
            icl_config_free(h);
        }
    }
}

/// Train `steps` steps through the API.
fn api_train(sets: &[(&str, &str)], steps: u64) -> (Vec<f64>, Vec<(u64, f64)>) {
    let (h, _) = config(sets);
    let mut tr = null_mut();
    check(unsafe { icl_trainer_new(h, c("scalar").as_ptr(), &mut tr) });
    check(unsafe { icl_trainer_train(tr, steps / 2, null_mut(), 0, null_mut()) });
    check(unsafe { icl_trainer_train(tr, steps - steps / 2, null_mut(), 0, null_mut()) });
    let mut rows = 0;
    check(unsafe { icl_trainer_log_len(tr, &mut rows) });
    let mut log = Vec::new();
    for i in 0..rows {
        let (mut s, mut l) = (0u64, 0.0);
        let (mut om, mut mu) = (vec![0.0; 2], vec![0.0; 2]);
        check(unsafe {
            icl_trainer_log_row(
                tr,
                i,
                &mut s,
                &mut l,
                om.as_mut_ptr(),
                2,
                mu.as_mut_ptr(),
                2,
            )
        });
        log.push((s, l));
    }
    let p = trainer_params(tr);
    unsafe {
        icl_trainer_free(tr);
        icl_config_free(h);
    }
    (p, log)
}

#[test]
fn trainer_equals_the_core_trainer_from_any_thread() {
    let sets = [
        ("task.L", "10"),
        ("train.batch", "16"),
        ("train.log_every", "10"),
        ("train.steps", "40"),
    ];
    let (_, cfg) = config(&sets);
    let mut core = Trainer::<f32>::new(&cfg, &ScalarEngine).unwrap();
    core.run(&mut |_, _| true).unwrap();
    let want: Vec<f64> = core.model.params.iter().map(|&x| x as f64).collect();
    // the rows of metrics.csv: the regular and the early ones, by step
    let want_log: Vec<(u64, f64)> = core.rows().iter().map(|r| (r.step, r.loss)).collect();
    assert_eq!(core.early.len(), 2, "the early rows of steps 2 and 5");
    let (p, log) = api_train(&sets, 40);
    assert_eq!(p, want);
    assert_eq!(log, want_log);
    // Four trainers on four threads at once give the same numbers.
    let handles: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || api_train(&sets, 40)))
        .collect();
    for h in handles {
        let (p2, log2) = h.join().unwrap();
        assert_eq!(p2, want);
        assert_eq!(log2, want_log);
    }
}

#[test]
fn step_on_a_callers_batch_is_one_optimiser_step() {
    let sets = [("task.L", "8"), ("train.dtype", "f64")];
    let (h, cfg) = config(&sets);
    let (mut task, mut tr) = (null_mut(), null_mut());
    check(unsafe { icl_task_new(h, &mut task) });
    check(unsafe { icl_trainer_new(h, c("scalar").as_ptr(), &mut tr) });
    let (z, y) = sample(task, 77, ICL_DOMAIN_EVAL, 5, 12, 8, 6);
    let mut loss = 0.0;
    check(unsafe {
        icl_trainer_step_batch(
            tr,
            12,
            8,
            z.as_ptr(),
            z.len(),
            y.as_ptr(),
            y.len(),
            &mut loss,
        )
    });
    // By hand: loss and gradient of the initial model, one Adam step.
    let mut m = Model::<f64>::init(&cfg).unwrap();
    let b = Batch::from_parts(12, 8, 5, 1, z.clone(), y.clone()).unwrap();
    let mut g = vec![0.0; m.params.len()];
    let l = loss_and_grad(&mut Runner::scalar(), &m, &b, &mut g).unwrap();
    Optimizer::new(&cfg.train, g.len())
        .step(&mut m.params, &g)
        .unwrap();
    assert_eq!(loss.to_bits(), l.to_bits());
    assert_eq!(trainer_params(tr), m.params);
    let mut step = 0;
    check(unsafe { icl_trainer_step_count(tr, &mut step) });
    assert_eq!(step, 1);
    unsafe {
        icl_trainer_free(tr);
        icl_task_free(task);
        icl_config_free(h);
    }
}

#[test]
fn checkpoints_round_trip_and_risk_is_mc_risk() {
    let sets = [("task.L", "12"), ("train.batch", "8")];
    let (h, cfg) = config(&sets);
    let mut tr = null_mut();
    check(unsafe { icl_trainer_new(h, null(), &mut tr) });
    check(unsafe { icl_trainer_train(tr, 25, null_mut(), 0, null_mut()) });
    let dir = std::env::temp_dir().join(format!("icl-ffi-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = c(dir.join("m.safetensors").to_str().unwrap());
    check(unsafe { icl_trainer_save(tr, path.as_ptr()) });
    let (mut m, mut m2, mut cfg2, mut tr2) = (null_mut(), null_mut(), null_mut(), null_mut());
    check(unsafe { icl_model_load(path.as_ptr(), &mut m) });
    check(unsafe { icl_model_set_engine(m, c("scalar").as_ptr()) });
    check(unsafe { icl_trainer_model(tr, &mut m2) });
    assert_eq!(params_of(m), trainer_params(tr));
    assert_eq!(params_of(m2), trainer_params(tr));
    check(unsafe { icl_model_config(m, &mut cfg2) });
    let toml = |h: *const icl_config| {
        let mut need = 0;
        unsafe { icl_config_to_toml(h, null_mut(), 0, &mut need) };
        let mut buf = vec![0u8; need];
        check(unsafe { icl_config_to_toml(h, buf.as_mut_ptr() as *mut _, need, null_mut()) });
        CStr::from_bytes_with_nul(&buf)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(toml(cfg2), cfg.to_toml());
    assert_eq!(toml(h), cfg.to_toml());
    check(unsafe { icl_trainer_from_checkpoint(path.as_ptr(), null(), &mut tr2) });
    let mut step = 0;
    check(unsafe { icl_trainer_step_count(tr2, &mut step) });
    assert_eq!(step, 25);
    assert_eq!(trainer_params(tr2), trainer_params(tr));
    // The model saved by icl_model_save loads back the same.
    let path2 = c(dir.join("m2.safetensors").to_str().unwrap());
    check(unsafe { icl_model_save(m, path2.as_ptr()) });
    let l = icl_core_run::checkpoint::load(&dir.join("m2.safetensors")).unwrap();
    assert_eq!(l.step, 25);
    let back = l.model.to::<f32>();
    assert_eq!(
        back.params.iter().map(|&x| x as f64).collect::<Vec<_>>(),
        params_of(m)
    );

    // Risk at two lengths equals mc_risk with the scalar engine.
    for len in [12usize, 30] {
        let (mut r, mut se) = (0.0, 0.0);
        check(unsafe { icl_model_risk(m, null(), len, 500, 9, &mut r, &mut se) });
        let task = Task::new(&cfg).unwrap();
        let mut e = Runner::<f32>::scalar();
        let want = mc_risk(&task, len, 500, 9, Some((&back, &mut e)), &[]).unwrap();
        assert_eq!(
            (r.to_bits(), se.to_bits()),
            (want[0].risk.to_bits(), want[0].stderr.to_bits())
        );
    }
    unsafe {
        icl_trainer_free(tr2);
        icl_config_free(cfg2);
        icl_model_free(m2);
        icl_model_free(m);
        icl_trainer_free(tr);
        icl_config_free(h);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn circuits_of_the_reduced_model_are_its_parameters() {
    // reduced model: parameters [omega_1..omega_H, mu_1..mu_H] (n_out = 1), score scale 1.
    let sets = [
        ("model.param", "reduced"),
        ("model.heads", "3"),
        ("train.dtype", "f64"),
    ];
    let (h, _) = config(&sets);
    let mut m = null_mut();
    check(unsafe { icl_model_new(h, &mut m) });
    let p = [0.5, -0.25, 0.125, 1.5, -0.75, 2.0];
    check(unsafe { icl_model_set_params(m, p.as_ptr(), 6) });
    let (mut om, mut mu) = ([0.0; 3], [0.0; 3]);
    check(unsafe { icl_model_circuits(m, om.as_mut_ptr(), 3, mu.as_mut_ptr(), 3) });
    assert_eq!(om, [0.5, -0.25, 0.125]);
    assert_eq!(mu, [1.5, -0.75, 2.0]);
    // Effective KQ = omega I on the x block, OV = mu on the y column.
    let (mut kq, mut ov) = (vec![0.0; 3 * 36], vec![0.0; 3 * 6]);
    check(unsafe {
        icl_model_circuit_matrices(m, kq.as_mut_ptr(), kq.len(), ov.as_mut_ptr(), ov.len())
    });
    for hd in 0..3 {
        for i in 0..6 {
            for j in 0..6 {
                let want = if i == j && i < 5 { p[hd] } else { 0.0 };
                assert_eq!(kq[hd * 36 + i * 6 + j], want);
            }
            assert_eq!(ov[hd * 6 + i], if i == 5 { p[3 + hd] } else { 0.0 });
        }
    }
    unsafe {
        icl_model_free(m);
        icl_config_free(h);
    }
}

/// The main value of a theory quantity through the C API.
fn theory(name: &str, kv: &[(&str, &str)]) -> Vec<f64> {
    let keys: Vec<CString> = kv.iter().map(|(k, _)| c(k)).collect();
    let vals: Vec<CString> = kv.iter().map(|(_, v)| c(v)).collect();
    let kp: Vec<*const std::ffi::c_char> = keys.iter().map(|k| k.as_ptr()).collect();
    let vp: Vec<*const std::ffi::c_char> = vals.iter().map(|v| v.as_ptr()).collect();
    let mut out = vec![0.0; 64];
    let mut n = 0;
    check(unsafe {
        icl_theory_value(
            c(name).as_ptr(),
            kp.as_ptr(),
            vp.as_ptr(),
            kv.len(),
            out.as_mut_ptr(),
            out.len(),
            &mut n,
        )
    });
    out.truncate(n);
    out
}

fn theory1(name: &str, kv: &[(&str, &str)]) -> f64 {
    let v = theory(name, kv);
    assert_eq!(v.len(), 1, "{name}");
    v[0]
}

#[test]
fn theory_gives_the_closed_forms() {
    // eta* = L / (d (1 + sigma^2) + L) = 40 / 45.5 (He et al. 2025 Thm 4.2(ii)).
    let eta = theory1("eta-star", &[]);
    assert!((eta - 40.0 / 45.5).abs() < 1e-15, "{eta}");
    let eta_v = theory1(
        "eta-vgd-star",
        &[("d", "5"), ("L", "40"), ("sigma2", "0.1")],
    );
    assert!((eta_v - 40.0 / 46.5).abs() < 1e-15, "{eta_v}");
    // Debiased GD risk is minimal at eta*, vanilla at eta_vgd*.
    for (variant, at) in [("debiased", eta), ("vanilla", eta_v)] {
        let r = |e: f64| theory1("gd-risk", &[("variant", variant), ("eta", &e.to_string())]);
        let r0 = r(at);
        for dx in [-1e-3, 1e-3] {
            assert!(r(at + dx) > r0, "{variant}");
        }
    }
    // Vanilla risk at eta: 1 + s2 - 2 eta + eta^2 (d (1 + s2) + L + 1) / L, by hand at eta = 0.5.
    let rv = theory1("gd-risk", &[("variant", "vanilla"), ("eta", "0.5")]);
    assert!(
        (rv - (1.1 - 1.0 + 0.25 * 46.5 / 40.0)).abs() < 1e-15,
        "{rv}"
    );
    // OLS: sigma^2 (1 + d / (L - d - 1)) = 0.1 (1 + 5/34).
    let ols = theory1("ols-risk", &[]);
    assert!((ols - 0.1 * (1.0 + 5.0 / 34.0)).abs() < 1e-15, "{ols}");
    // 2 gamma mu_gamma -> eta* as gamma -> 0 (the manifold's GD limit, Thm 4.2(ii)).
    let mg = theory1("mu-gamma", &[("gamma", "1e-4")]);
    assert!((2.0 * 1e-4 * mg - eta).abs() < 1e-6, "{}", 2.0 * 1e-4 * mg);
    // mu_gamma by hand at gamma = 0.3: 0.3 / (2 (0.09 + (1.1/40) sinh(0.45))).
    let mg = theory1("mu-gamma", &[("gamma", "0.3")]);
    assert!(
        (mg - 0.3 / (2.0 * (0.09 + 0.0275 * 0.45f64.sinh()))).abs() < 1e-14,
        "{mg}"
    );
    // One head at the NW optimum: omega* = 1/sqrt(d).
    let nw = theory("nw-optimum", &[]);
    assert!((nw[0] - 1.0 / 5f64.sqrt()).abs() < 1e-15);
    // The temperature paper: --form paper is Theorem 4.7 (spec 7.1 golden value 2.99980 at
    // Sigma_x = 2I, d = 50, l = 100); the default exact form is the model's finite-size optimum,
    // a little lower (spec 10's Monte Carlo: 2.9934).
    let paper = theory1(
        "optimal-temperature",
        &[("test-sigma-x", "2"), ("form", "paper")],
    );
    assert!((paper - 2.99980).abs() < 1e-5, "{paper}");
    let exact = theory1("optimal-temperature", &[("test-sigma-x", "2")]);
    assert!(exact < paper && exact > 0.99 * paper, "{exact}");
    // A list-valued quantity: the plateau levels of Zhang et al. (2025).
    let pl = theory("plateaus", &[("eigs", "0.4,0.3,0.2,0.1"), ("N", "31")]);
    assert_eq!(pl.len(), 5);
    assert!((pl[1] - 0.640580).abs() < 1e-6);
}

#[test]
fn theory_through_c_equals_icl_theory_json_for_every_quantity() {
    let exe = &ffi_common::built().icl;
    let mut list = vec![0u8; 1 << 20];
    let mut need = 0;
    check(unsafe { icl_theory_list(list.as_mut_ptr() as *mut _, list.len(), &mut need) });
    let list: serde_json::Value = serde_json::from_str(
        CStr::from_bytes_with_nul(&list[..need])
            .unwrap()
            .to_str()
            .unwrap(),
    )
    .unwrap();
    let names: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.len() >= 31, "{names:?}");
    for name in &names {
        // cheap arguments for the quantities with required parameters or long defaults
        let kv: &[(&str, &str)] = match name.as_str() {
            "mu-gamma" | "manifold-loss" => &[("gamma", "0.1267")],
            "mu-star" => &[("omega", "0.1,-0.1")],
            "approx-loss" => &[("omega", "0.1,-0.1"), ("mu", "3,-3")],
            "he2025-gd" => &[("omega", "0.1,-0.1"), ("mu", "1,-1"), ("steps", "100")],
            "plateaus" | "zhang-m-star" | "v-star" | "scalar-ode" | "plateau-time" => {
                &[("eigs", "0.4,0.3,0.2,0.1")]
            }
            "linattn-flow" => &[("eigs", "0.4,0.3,0.2,0.1"), ("t-end", "100")],
            "he2025-flow" => &[("t-end", "20")],
            "alg1-risk" | "gd-steps-risk" | "regression-baselines" | "iv-risk" => &[("n", "50")],
            "bayes-risk-mc" => &[("n", "500")],
            _ => &[],
        };
        let keys: Vec<CString> = kv.iter().map(|(k, _)| c(k)).collect();
        let vals: Vec<CString> = kv.iter().map(|(_, v)| c(v)).collect();
        let kp: Vec<*const std::ffi::c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let vp: Vec<*const std::ffi::c_char> = vals.iter().map(|v| v.as_ptr()).collect();
        let mut need = 0;
        let s = unsafe {
            icl_theory_eval(
                c(name).as_ptr(),
                kp.as_ptr(),
                vp.as_ptr(),
                kv.len(),
                null_mut(),
                0,
                &mut need,
            )
        };
        assert_eq!(s, icl_status::ICL_ERR_SIZE, "{name}: size query");
        let mut buf = vec![0u8; need];
        check(unsafe {
            icl_theory_eval(
                c(name).as_ptr(),
                kp.as_ptr(),
                vp.as_ptr(),
                kv.len(),
                buf.as_mut_ptr() as *mut _,
                need,
                null_mut(),
            )
        });
        let from_c: serde_json::Value =
            serde_json::from_str(CStr::from_bytes_with_nul(&buf).unwrap().to_str().unwrap())
                .unwrap();
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["theory", name, "--json"]);
        for (k, v) in kv {
            cmd.arg(format!("--{k}")).arg(v);
        }
        let o = cmd.output().unwrap();
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let from_cli: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(from_c, from_cli, "{name}");
    }
}

#[test]
fn a_trainer_checkpoint_resumes_bit_for_bit() {
    // issue 15 class 8: through icl.h, save after 30 steps, continue 20 from the file, and get the
    // parameters and log of 50 uninterrupted steps
    let sets = [
        ("task.L", "10"),
        ("train.batch", "16"),
        ("train.log_every", "7"),
    ];
    let (h, _) = config(&sets);
    let dir = std::env::temp_dir().join(format!("icl-ffi-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = c(dir.join("t.safetensors").to_str().unwrap());
    let (mut a, mut b, mut full) = (null_mut(), null_mut(), null_mut());
    check(unsafe { icl_trainer_new(h, null(), &mut a) });
    check(unsafe { icl_trainer_train(a, 30, null_mut(), 0, null_mut()) });
    check(unsafe { icl_trainer_save(a, path.as_ptr()) });
    unsafe { icl_trainer_free(a) };
    check(unsafe { icl_trainer_from_checkpoint(path.as_ptr(), null(), &mut b) });
    check(unsafe { icl_trainer_train(b, 20, null_mut(), 0, null_mut()) });
    check(unsafe { icl_trainer_new(h, null(), &mut full) });
    check(unsafe { icl_trainer_train(full, 50, null_mut(), 0, null_mut()) });
    assert_eq!(trainer_params(b), trainer_params(full));
    let log = |t: *mut icl_trainer| {
        let mut n = 0;
        check(unsafe { icl_trainer_log_len(t, &mut n) });
        (0..n)
            .map(|i| {
                let (mut s, mut l) = (0u64, 0.0f64);
                let (mut om, mut mu) = ([0.0; 2], [0.0; 2]);
                check(unsafe {
                    icl_trainer_log_row(
                        t,
                        i,
                        &mut s,
                        &mut l,
                        om.as_mut_ptr(),
                        2,
                        mu.as_mut_ptr(),
                        2,
                    )
                });
                (s, l.to_bits(), om.map(f64::to_bits), mu.map(f64::to_bits))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(log(b), log(full));
    unsafe {
        icl_trainer_free(b);
        icl_trainer_free(full);
        icl_config_free(h);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sizes_that_would_not_fit_are_errors_not_aborts() {
    // issue 19 class 3: a risk at a length whose batches would need terabytes, a sample of 2^40
    let (h, _) = config(&[]);
    let (mut m, mut task) = (null_mut(), null_mut());
    check(unsafe { icl_model_new(h, &mut m) });
    check(unsafe { icl_task_new(h, &mut task) });
    let (mut r, mut se) = (0.0, 0.0);
    let s = unsafe { icl_model_risk(m, null(), 1 << 40, 10, 0, &mut r, &mut se) };
    assert_ne!(s, icl_status::ICL_OK);
    let mut z = [0.0; 4];
    let mut y = [0.0; 1];
    let s = unsafe {
        icl_task_sample(
            task,
            0,
            ICL_DOMAIN_TRAIN,
            0,
            1 << 20,
            1 << 20,
            z.as_mut_ptr(),
            z.len(),
            y.as_mut_ptr(),
            y.len(),
        )
    };
    assert_eq!(s, icl_status::ICL_ERR_SIZE);
    unsafe {
        icl_task_free(task);
        icl_model_free(m);
        icl_config_free(h);
    }
}
