//! He et al. (2025)'s presets: the one-layer multi-head softmax model of §3 (the defaults,
//! [`Config::default`](crate::Config::default)) and its variants, and `quick` for smoke tests.
use super::Preset;

/// (name, description, overrides applied on top of [`Config::default`](crate::Config::default) = `he2025`).
pub const PRESETS: &[Preset] = &[
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
];
