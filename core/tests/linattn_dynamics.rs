//! Training dynamics of linear attention (Zhang et al. 2025), reduced protocol sizes: D = 4,
//! N = 31, Lambda eigenvalues (.4, .3, .2, .1) in a Haar basis, full-batch GD on a fixed set
//! (sufficient statistics), paper convention (1/N on, App. C.2 init).
use icl_core::families::linear_attention::metrics::{
    detect_plateaus, nearest_level, PlateauOptions,
};
use icl_core::families::linear_attention::LinattnTheory;
use icl_core::theory::zhang2025::crossings;
use icl_core::train::{Options, Trainer};
use icl_core::{Config, Model, ScalarEngine};

fn base(param: &str, heads: usize, rank: usize, w: f64, lr: f64, steps: u64, p: usize) -> Config {
    let mut c = Config::default();
    for (k, v) in [
        ("task.kind", "eigs"),
        ("task.eigs", "0.4,0.3,0.2,0.1"),
        ("task.L", "31"),
        ("task.sigma2", "0"),
        ("task.query_noise", "false"),
        ("task.centre", "true"),
        ("task.whiten", "true"),
        ("model.attention", "linear"),
        ("model.self_attend", "true"),
        ("model.scale", "1"),
        ("model.init", "zhang_paper"),
        ("train.optimizer", "sgd"),
        ("train.dtype", "f64"),
        ("train.seed", "0"),
        ("train.log_every", "5"),
        // the finite-time thresholds below were set on law-1 samples; under law 2 the R = 2 run
        // of `attn_s_rank_r_value_weights` ends step 4,000 with a third value weight at 0.53,
        // over the 0.5 that counts as grown (values 2.25, 1.72, -0.53, 0.11, 0.01)
        ("task.data_law", "1"),
    ] {
        c.set(k, v).unwrap();
    }
    c.set("model.param", param).unwrap();
    c.set("model.heads", &heads.to_string()).unwrap();
    c.set("model.rank", &rank.to_string()).unwrap();
    c.set("model.init_scale", &w.to_string()).unwrap();
    c.set("train.lr", &lr.to_string()).unwrap();
    c.set("train.steps", &steps.to_string()).unwrap();
    c.set("task.P", &p.to_string()).unwrap();
    c.validate().unwrap();
    c
}

/// A finished run and the theory of its config.
struct Run {
    tr: Trainer<f64>,
    levels: Vec<f64>,
    th: LinattnTheory,
}

impl Run {
    fn curve(&self) -> Vec<(f64, f64)> {
        self.tr.curve()
    }
    /// The value weights of the last row.
    fn last_values(&self) -> Vec<f64> {
        self.tr.group(self.tr.log.last().unwrap(), "values")
    }
}

fn train(cfg: &Config) -> Run {
    let opts = Options {
        test_size: 0,
        tokens: false,
    };
    let model = Model::<f64>::init(cfg).unwrap();
    let mut tr = Trainer::with_model(cfg, model, &ScalarEngine, &opts).unwrap();
    tr.run(&mut |_, _| true).unwrap();
    let th = LinattnTheory::of(cfg, &tr.task);
    Run {
        levels: th.levels.clone(),
        tr,
        th,
    }
}

/// First step at which the loss falls below `level`.
fn first_below(tr: &Run, level: f64) -> f64 {
    tr.curve()
        .iter()
        .find(|(_, l)| *l < level)
        .map(|(t, _)| *t)
        .expect("never crossed")
}

fn grown(tr: &Run) -> usize {
    tr.last_values().iter().filter(|v| v.abs() > 0.5).count()
}

#[test]
fn attn_s_rank1_saddle_to_saddle() {
    // Spec AT9/AT10 on a fixed set of P = 80000 (AT17: plateaus within 0.03 expected, we ask 0.02):
    // dt = 2 lr = 0.5 tau, w_init = 0.1, H = 5, 24000 steps = 12000 tau.
    let cfg = base("separate_reduced", 5, 1, 0.1, 0.25, 24_000, 80_000);
    let tr = train(&cfg);
    let curve = tr.curve();
    let pl = detect_plateaus(&curve, &PlateauOptions::default());
    // levels 1, 0.640580, 0.377372, 0.209805, 0.135995 (eqs. 19, 63)
    let want = [1.0, 0.640580, 0.377372, 0.209805, 0.135995];
    for (a, b) in tr.levels.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{:?}", tr.levels);
    }
    assert_eq!(pl.len(), 5, "D = 4 drops -> 5 plateaus: {pl:?}");
    for (m, p) in pl.iter().enumerate() {
        let (near, _) = nearest_level(&tr.levels, p.loss);
        assert_eq!(near, m, "{pl:?}");
        assert!(
            (p.loss - tr.levels[m]).abs() < 0.02,
            "plateau {m}: {} vs {}",
            p.loss,
            tr.levels[m]
        );
    }
    let cr = crossings(&tr.levels, &curve);
    assert!(cr.iter().all(|c| c.is_some()), "{cr:?}");
    assert!(cr.windows(2).all(|w| w[0] < w[1]), "{cr:?}");
    // value weights: 4 grow, to v*_d = (1.30967, 1.43005, 1.61204, 1.94702) within 3 %
    assert_eq!(grown(&tr), 4);
    let mut v: Vec<f64> = tr
        .last_values()
        .iter()
        .map(|v| v.abs())
        .filter(|v| *v > 0.5)
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    for (a, b) in v.iter().zip([1.30967, 1.43005, 1.61204, 1.94702]) {
        assert!((a / b - 1.0).abs() < 0.03, "{v:?}");
    }
    // PCR: at the flattest point of each plateau lasting >= 200 tau (400 steps), M is close to
    // M_m (spec AT11: < 0.05 in the population; finite sample here)
    for (m, p) in pl
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, p)| p.end_step - p.start_step >= 400.0)
    {
        let mm = tr.th.spectrum.pcr_matrix(m, tr.th.inv_n);
        let row = &tr.tr.log[p.mid_index];
        let dist =
            icl_core::families::linear_attention::metrics::rel_dist(&tr.tr.group(row, "m"), &mm);
        eprintln!("plateau {m}: |M - M_m|/|M_m| = {dist}");
        assert!(dist < 0.1, "plateau {m}: |M - M_m|/|M_m| = {dist}");
    }
}

#[test]
fn attn_s_rank_r_value_weights() {
    // ceil(D / R) value weights grow (§5, App. F): R = 2 -> 2, R = 4 -> 1.
    for (r, want) in [(2usize, 2usize), (4, 1)] {
        let tr = train(&base("separate_reduced", 5, r, 0.1, 0.25, 4_000, 80_000));
        assert_eq!(grown(&tr), want, "R = {r}: {:?}", tr.last_values());
        let last = tr.tr.log.last().unwrap().loss;
        assert!(
            (last - 0.135995).abs() < 0.005,
            "R = {r}: final loss {last}"
        );
    }
}

#[test]
fn init_scale_plateau_laws() {
    // ATTN_S: t_1 ~ 1/w (eq. 72): halving w doubles the first plateau (AT13: 2.0 +- 0.1 in the
    // population; we ask [1.7, 2.3]). Same normalised draws (same seed).
    let mid = 0.5 * (1.0 + 0.640580);
    let t = |w: f64| {
        first_below(
            &train(&base("separate_reduced", 5, 1, w, 0.25, 1_500, 80_000)),
            mid,
        )
    };
    let (t1, t2) = (t(0.1), t(0.05));
    let ratio = t2 / t1;
    assert!(
        (1.7..=2.3).contains(&ratio),
        "ATTN_S t1(w/2)/t1(w) = {t2}/{t1} = {ratio}"
    );
    // ATTN_M: t ~ (tau/|Lambda^2|_F) ln(1/w) (eq. 54): halving w adds a constant
    // ln 2 / 0.188149 = 3.684 tau = 36.8 steps at dt = 2 lr = 0.1 tau.
    let half = 0.5 * (1.0 + 0.135995);
    let tm = |w: f64| {
        first_below(
            &train(&base("merged_reduced", 8, 1, w, 0.05, 900, 80_000)),
            half,
        )
    };
    let (a, b, c) = (tm(1e-4), tm(5e-5), tm(2.5e-5));
    let (s1, s2) = (b - a, c - b);
    let want = 2f64.ln() / 0.188149 / 0.1;
    for s in [s1, s2] {
        assert!(
            (s / want - 1.0).abs() < 0.15,
            "ATTN_M shifts {s1}, {s2} vs {want}"
        );
    }
}
