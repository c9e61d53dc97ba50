//! Zhang et al. (2025)'s presets: linear attention on the eigs task, the figures of the paper.
use super::Preset;

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

/// (name, description, overrides).
pub const PRESETS: &[Preset] = &[
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
];
