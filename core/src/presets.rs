//! Named configurations reproducing the papers' setups. Any key can be overridden afterwards
//! with [`crate::Config::set`].
use crate::config::Config;
use crate::{Error, Result};
use alloc::format;

/// Overrides of a Zhang et al. (2025) preset: the eigs task in the reference code's
/// finite-sample form and its conventions (no 1/N, `zhang_code` init, plain GD in f64), then the
/// preset's own overrides (applied later, so they win).
macro_rules! zh {
    ($($kv:expr),* $(,)?) => {
        &[
            ("task.kind", "eigs"),
            ("task.eigs", "0.4,0.3,0.2,0.1"),
            ("task.basis", "haar"),
            ("task.L", "31"),
            ("task.sigma2", "0"),
            ("task.query_noise", "false"),
            ("task.centre", "true"),
            ("task.whiten", "true"),
            ("model.attention", "linear"),
            ("model.self_attend", "true"),
            ("model.scale", "1"),
            ("model.lin_norm", "1"),
            ("model.init", "zhang_code"),
            ("train.optimizer", "sgd"),
            ("train.dtype", "f64"),
            ("train.seed", "0"),
            ("train.log_every", "5"),
            $($kv),*
        ]
    };
}

/// [`zh!`] with the ATTN_S settings of fig. 3 (reference code): H=5, rank 1, init 0.01, lr 0.02,
/// P=80000; 30001 steps instead of the code's 10001, which end on the third plateau.
macro_rules! zh_s {
    ($($kv:expr),* $(,)?) => {
        zh!(
            ("model.param", "separate_reduced"),
            ("model.heads", "5"),
            ("model.rank", "1"),
            ("model.init_scale", "0.01"),
            ("train.lr", "0.02"),
            ("train.steps", "30001"),
            ("task.P", "80000"),
            $($kv),*
        )
    };
}

/// Overrides of a multilayer-paper preset (§3, §4.1): the varying-covariance task (d = 5, L = 120,
/// sigma^2 = 0.1, lambda ~ U(0.8, 1.2)), a looped softmax transformer with H = 2, Adam 1e-3, batch
/// 256, "small random values" as init: K, Q, V, O entries N(0, 0.1^2) (the PyTorch default,
/// U(+-1/sqrt(D)), stalls with large off-diagonal circuits: at L = 40 after 10k steps its error is
/// 0.93 against 0.27), score scale 1/sqrt(d+1) folded into Phi; then the preset's own.
macro_rules! ml {
    ($($kv:expr),* $(,)?) => {
        &[
            ("model.init", "gaussian"),
            ("model.init_scale", "0.1"),
            ("task.kind", "varying"),
            ("task.d", "5"),
            ("task.L", "120"),
            ("task.sigma2", "0.1"),
            ("model.arch", "transformer"),
            ("model.heads", "2"),
            ("train.log_every", "1000"),
            $($kv),*
        ]
    };
}

/// Key-value overrides of a preset.
pub type Overrides = &'static [(&'static str, &'static str)];

/// (name, description, overrides applied on top of [`Config::default`] = `he2025`).
pub const PRESETS: &[(&str, &str, Overrides)] = &[
    ("he2025", "He et al. 2025 §3: H=2 full softmax attention, d=5, L=40, sigma^2=0.1, Adam 1e-3, batch 256, 5e5 steps", &[]),
    ("he2025-h1", "he2025 with a single head (figure 2a: omega ~ 0.52, mu ~ 1.42)", &[("model.heads", "1")]),
    ("he2025-h4", "he2025 with four heads (figures 2b, 12, 13)", &[("model.heads", "4")]),
    (
        "he2025-aniso",
        "anisotropic covariates, Sigma = KMS(rho = 0.5) (§B.3, figures 11, 14)",
        &[("task.kind", "anisotropic"), ("task.rho", "0.5")],
    ),
    (
        "he2025-multitask",
        "two tasks, d=6, S1={1..4}, S2={3..6}, paper generator (§B.4, figures 15-18)",
        &[("task.kind", "multitask"), ("task.d", "6"), ("task.supports", "1,2,3,4;3,4,5,6"), ("task.variant", "paper")],
    ),
    (
        "he2025-multitask-code",
        "he2025-multitask with the reference code's generator (independent unscaled betas, noise 0.4, clean query)",
        &[("task.kind", "multitask"), ("task.d", "6"), ("task.supports", "1,2,3,4;3,4,5,6"), ("task.variant", "code")],
    ),
    (
        "he2025-linear",
        "linear attention with the 1/L factor frozen at L=40, query in the sum (§B.1, figure 7)",
        &[("model.attention", "linear"), ("model.heads", "1")],
    ),
    ("he2025-affine", "normalised activation f(x) = 1 + Cx, C = 0.5 (Table 1)", &[("model.activation", "affine"), ("model.c", "0.5")]),
    ("he2025-square", "normalised activation f(x) = (1 + Cx)^2, C = 0.5 (Table 1)", &[("model.activation", "square"), ("model.c", "0.5")]),
    ("he2025-tanh", "normalised activation f(x) = 1 + tanh x (Table 1)", &[("model.activation", "tanh")]),
    ("he2025-merged", "he2025 with merged KQ/OV parameters", &[("model.param", "merged"), ("model.init", "gaussian"), ("model.init_scale", "0.1")]),
    (
        "he2025-reduced",
        "the reduced (omega, mu) model, small symmetric init (App. D)",
        &[("model.param", "reduced"), ("model.init", "oppo_small_id"), ("model.init_scale", "0.001")],
    ),
    ("quick", "he2025 with 2000 steps and batch 64, for smoke tests", &[("train.steps", "2000"), ("train.batch", "64"), ("train.log_every", "100")]),
    (
        "zhang2025-fig1",
        "Zhang et al. 2025 fig. 1: reduced ATTN_M (H=8) and its cubic-feature twin, D=4, N=31, eig (.4,.3,.2,.1); code convention (no 1/N), init 1e-6, GD lr 1e-3 on P=5000, 6001 steps",
        zh!(("model.param", "merged_reduced"), ("model.heads", "8"), ("model.init_scale", "1e-6"), ("train.lr", "1e-3"), ("train.steps", "6001"), ("task.P", "5000"), ("train.seed", "10")),
    ),
    (
        "zhang2025-fig3",
        "fig. 3: reduced ATTN_S rank 1, H=5 (code), D=4, eig (.4,.3,.2,.1): 4 drops; init 0.01, lr 0.02, P=80000, 30001 steps (the code's 10001 end on the third plateau)",
        zh_s!(),
    ),
    (
        "zhang2025-fig4",
        "fig. 4: ATTN_S, D=8, H=9, rank 1 (--set model.rank=2|4|8), eig (8..1)/36 as in the code; init 5e-3, lr 0.02, P=80000, 20001 steps",
        zh_s!(("task.eigs", "0.2222222222222222,0.19444444444444445,0.16666666666666666,0.1388888888888889,0.1111111111111111,0.08333333333333333,0.05555555555555555,0.027777777777777776"), ("model.heads", "9"), ("model.init_scale", "5e-3"), ("train.steps", "20001")),
    ),
    (
        "zhang2025-fig5-merged",
        "fig. 5: softmax ATTN_M (merged, all weights trained, softmax over the N+1 keys, no 1/N), fig. 1 settings but lr 0.031 = N x 1e-3 (the softmax's 1/(N+1) weights act like the paper's 1/N) and 3001 steps",
        zh!(("model.attention", "softmax"), ("model.param", "merged"), ("model.heads", "8"), ("model.init_scale", "1e-6"), ("train.lr", "0.031"), ("train.steps", "3001"), ("task.P", "5000"), ("train.seed", "10")),
    ),
    (
        "zhang2025-fig5-separate",
        "fig. 5: softmax ATTN_S rank 1 (separate, all weights trained), fig. 3 settings but lr 0.2 (~N^(2/3) x 0.02), P=5000 and 6001 steps (token level; --set task.P=80000 for the paper's)",
        zh_s!(("model.attention", "softmax"), ("model.param", "separate"), ("task.P", "5000"), ("train.lr", "0.2"), ("train.steps", "6001")),
    ),
    (
        "zhang2025-fig8-merged",
        "fig. 8: reduced ATTN_M on the next-token-prediction loss over all prefixes (N_max=31, 1/N'), paper convention: init 1e-6 (C.2), lr 0.1, P=20000",
        zh!(("task.ntp", "true"), ("model.lin_norm", "N"), ("model.init", "zhang_paper"), ("model.param", "merged_reduced"), ("model.heads", "8"), ("model.init_scale", "1e-6"), ("train.lr", "0.1"), ("train.steps", "8001"), ("task.P", "20000")),
    ),
    (
        "zhang2025-fig8-separate",
        "fig. 8: reduced ATTN_S rank 1 (H=5) on the next-token-prediction loss (N_max=31, 1/N'), paper convention: init 0.1 (C.2), lr 0.25, P=20000",
        zh_s!(("task.ntp", "true"), ("model.lin_norm", "N"), ("model.init", "zhang_paper"), ("model.init_scale", "0.1"), ("train.lr", "0.25"), ("train.steps", "30001"), ("task.P", "20000")),
    ),
    (
        "zhang2025-fig11",
        "fig. 11: ATTN_S rank 2 (--set model.rank=3|4), H=5, fig. 3 settings: a new v_h escapes only after conspicuous plateaus",
        zh_s!(("model.rank", "2")),
    ),
    (
        "zhang2025-fig13",
        "fig. 13: ATTN_S rank 1, H=5, repeated eigenvalues (.35,.35,.15,.15), fig. 3 settings",
        zh_s!(("task.eigs", "0.35,0.35,0.15,0.15")),
    ),
    (
        "zhang2025-fig14",
        "fig. 14: full ATTN_M, H=8, Lambda = I/4, 40% of sequences share a fixed w* (--set task.icl_fraction=c); train, ICL-test and IWL-test losses; init 1e-6, lr 5e-4, P=5000, 4001 steps",
        zh!(("model.param", "merged"), ("model.heads", "8"), ("task.eigs", "0.25,0.25,0.25,0.25"), ("task.basis", "identity"), ("task.icl_fraction", "0.6"), ("task.whiten", "false"), ("model.init_scale", "1e-6"), ("train.lr", "5e-4"), ("train.steps", "4001"), ("task.P", "5000")),
    ),
    ("multilayer-t1", "multilayer paper: 1-layer looped softmax TF, H=2, d=5, L=120, lambda~U(0.8,1.2) (fig. 1a, 21; steps not given: 100k)", ml!(("model.layers", "1"), ("train.steps", "100000"))),
    ("multilayer-t2", "multilayer paper: 2-layer looped softmax TF, H=2 (fig. 1a, Table 1), 100k steps", ml!(("model.layers", "2"), ("train.steps", "100000"))),
    ("multilayer-t3", "multilayer paper: 3-layer looped softmax TF, H=2 (fig. 1a-4, Table 1), 150k steps", ml!(("model.layers", "3"), ("train.steps", "150000"))),
    ("multilayer-t4", "multilayer paper: 4-layer looped softmax TF, H=2 (fig. 1a, Table 1), 200k steps", ml!(("model.layers", "4"), ("train.steps", "200000"))),
    ("multilayer-h1", "multilayer paper fig. 9: 2-layer looped softmax TF with a single head", ml!(("model.layers", "2"), ("model.heads", "1"), ("train.steps", "100000"))),
    ("multilayer-linear-t2", "multilayer paper C.2: 2-layer looped linear TF, H=1 (figs. 16-17, Table 1)", ml!(("model.attention", "linear"), ("model.heads", "1"), ("model.layers", "2"), ("train.steps", "100000"))),
    ("multilayer-linear-t3", "multilayer paper C.2: 3-layer looped linear TF, H=1 (Table 1)", ml!(("model.attention", "linear"), ("model.heads", "1"), ("model.layers", "3"), ("train.steps", "150000"))),
    ("multilayer-linear-t4", "multilayer paper C.2: 4-layer looped linear TF, H=1 (Table 1)", ml!(("model.attention", "linear"), ("model.heads", "1"), ("model.layers", "4"), ("train.steps", "200000"))),
    ("multilayer-nonlooped-t2", "multilayer paper C.1: 2-layer non-looped softmax TF, H=2 (figs. 14-15)", ml!(("model.layers", "2"), ("model.looped", "false"), ("train.steps", "100000"))),
    ("multilayer-linear-nonlooped-t3", "multilayer paper fig. 18: 3-layer non-looped linear TF, H=1", ml!(("model.attention", "linear"), ("model.heads", "1"), ("model.layers", "3"), ("model.looped", "false"), ("train.steps", "150000"))),
    ("multilayer-const-kms", "multilayer paper C.3: constant Sigma = KMS(0.5), 2-layer looped, H=2 (fig. 20)", ml!(("task.covariance", "kms"), ("task.rho", "0.5"), ("model.layers", "2"), ("train.steps", "100000"))),
    ("multilayer-const-identity", "multilayer paper C.3: constant Sigma = I, 2-layer looped, H=2 (fig. 20)", ml!(("task.covariance", "identity"), ("model.layers", "2"), ("train.steps", "100000"))),
    ("multilayer-scaled", "multilayer paper C.5: fixed eigenvalues k (1, .75, .5, .75, 1) under a random rotation, 2-layer (set task.eigs for k != 1; fig. 22)", ml!(("task.covariance", "rotated"), ("task.eigs", "1,0.75,0.5,0.75,1"), ("model.layers", "2"), ("train.steps", "100000"))),
    ("multilayer-d12", "multilayer paper B.1: d=12, 3-layer looped, H=2 (fig. 11)", ml!(("task.d", "12"), ("model.layers", "3"), ("train.steps", "150000"))),
    ("multilayer-wide-lambda", "multilayer paper B.1: lambda ~ U(0.5, 3.0), 3-layer looped, H=2 (fig. 12)", ml!(("task.lambda_min", "0.5"), ("task.lambda_max", "3.0"), ("model.layers", "3"), ("train.steps", "150000"))),
    ("temperature-fig6", "temperature paper fig. 6 on icl's transformer instead of GPT-2: d=20, L=40, 2-layer looped softmax, H=2, Sigma_x = I, sigma2=0.01, batch 64, 40k steps (evaluate with --shift x_cov=3 --tau 1,opt)", ml!(("task.covariance", "identity"), ("model.layers", "2"), ("task.d", "20"), ("task.L", "40"), ("task.sigma2", "0.01"), ("train.batch", "64"), ("train.steps", "40000"))),
    ("iv-2stage", "multilayer paper §5: in-context IV, two-block model (1-layer stage 1 over [z; x], 3-layer looped stage 2), q=6, p=4, L=200, H=2, 200k steps (fig. 5)", ml!(("task.kind", "iv"), ("task.d", "4"), ("task.iv_q", "6"), ("task.L", "200"), ("model.arch", "iv2stage"), ("model.layers", "3"), ("train.steps", "200000"))),
    ("iv-tf-ref", "multilayer paper §5 'TF Ref': one-stage 4-layer looped TF on [x; y] of the IV data, q=6, p=4, L=200 (fig. 5a)", ml!(("task.kind", "iv"), ("task.d", "4"), ("task.iv_q", "6"), ("task.L", "200"), ("model.layers", "4"), ("train.steps", "200000"))),
];

/// The config of a preset.
pub fn preset(name: &str) -> Result<Config> {
    let (_, _, sets) = PRESETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| Error::UnknownPreset(format!("{name} (see `icl presets`)")))?;
    let mut c = Config::default();
    for (k, v) in sets.iter() {
        c.set(k, v)?;
    }
    c.validate()?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_presets_validate() {
        for (n, _, _) in super::PRESETS {
            super::preset(n).unwrap();
        }
        assert!(super::preset("nope").is_err());
    }
}
