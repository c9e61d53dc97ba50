//! The temperature paper's presets: Fig. 6 asked of icl's multi-layer transformer (the paper's
//! GPT-2 checkpoint cannot be downloaded here).
use super::multilayer::ml;
use super::Preset;

/// (name, description, overrides).
pub const PRESETS: &[Preset] = &[
    ("temperature-fig6", "temperature paper fig. 6 on icl's transformer instead of GPT-2: d=20, L=40, 2-layer looped softmax, H=2, Sigma_x = I, sigma2=0.01, batch 64, 40k steps (evaluate with --shift x_cov=3 --tau 1,opt)", ml!(("task.covariance", "identity"), ("model.layers", "2"), ("task.d", "20"), ("task.L", "40"), ("task.sigma2", "0.01"), ("train.batch", "64"), ("train.steps", "40000"))),
    ("temperature-fig6-gpt2", "temperature paper fig. 6 on the spec's fallback, a small GPT-2 (Garg et al.'s model: 6 layers, 4 heads, n_embd 128) trained on eq. (2): d=20, L=40, Sigma_x = I, sigma2=0.01 (task.kind = linear: the same law), batch 64, Adam 1e-4, Garg et al.'s curriculum (d 5->20, L 10->40 over 30k steps), 50k steps (evaluate with --shift x_cov=3 --tau 1,opt)", &[("model.arch", "gpt2"), ("task.kind", "linear"), ("task.d", "20"), ("task.L", "40"), ("task.sigma2", "0.01"), ("task.curriculum", "true"), ("model.layers", "6"), ("model.heads", "4"), ("model.embd", "128"), ("model.positions", "101"), ("train.batch", "64"), ("train.lr", "1e-4"), ("train.steps", "50000"), ("train.snapshot_every", "0")]),
];
