//! The multilayer paper's presets: looped transformers on varying-covariance regression
//! ([`PRESETS`], §3-§4 and appendices B, C) and in-context IV regression ([`IV`], §5).
use super::Preset;

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

pub(super) use ml;

/// The looped (and non-looped) transformers: (name, description, overrides).
pub const PRESETS: &[Preset] = &[
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
];

/// In-context IV regression (§5): the two-block model and the one-stage TF Ref.
pub const IV: &[Preset] = &[
    ("iv-2stage", "multilayer paper §5: in-context IV, two-block model (1-layer stage 1 over [z; x], 3-layer looped stage 2), q=6, p=4, L=200, H=2, 200k steps (fig. 5)", ml!(("task.kind", "iv"), ("task.d", "4"), ("task.iv_q", "6"), ("task.L", "200"), ("model.arch", "iv2stage"), ("model.layers", "3"), ("train.steps", "200000"))),
    ("iv-tf-ref", "multilayer paper §5 'TF Ref': one-stage 4-layer looped TF on [x; y] of the IV data, q=6, p=4, L=200 (fig. 5a)", ml!(("task.kind", "iv"), ("task.d", "4"), ("task.iv_q", "6"), ("task.L", "200"), ("model.layers", "4"), ("train.steps", "200000"))),
];
