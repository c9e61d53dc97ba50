//! Garg et al. (2022)'s GPT-2 in-context learner on their linear regression (`task.kind =
//! linear`: x ~ N(0, I_d), w ~ N(0, I_d), y = w.x without noise), trained with their curriculum
//! (d from 5, L from 10, growing every 2000 steps).
use super::Preset;

/// Overrides of a Garg et al. preset: their data, model and training, with the size's
/// (layers, heads, embd) and any further overrides.
macro_rules! garg {
    ($layers:literal, $heads:literal, $embd:literal $(, $kv:expr)* $(,)?) => {
        &[
            ("model.arch", "gpt2"),
            ("task.kind", "linear"),
            ("task.d", "20"),
            ("task.sigma2", "0"),
            ("task.L", "40"),
            ("task.curriculum", "true"),
            ("model.layers", $layers),
            ("model.heads", $heads),
            ("model.embd", $embd),
            ("model.positions", "101"),
            ("train.batch", "64"),
            ("train.lr", "1e-4"),
            ("train.steps", "500001"),
            ("train.snapshot_every", "0"),
            $($kv),*
        ]
    };
}

/// (name, description, overrides).
pub const PRESETS: &[Preset] = &[
    ("garg-linear", "Garg et al. (2022) GPT-2 on linear regression: d=20, L=40, 12 layers, 8 heads, n_embd 256, positions 101, batch 64, Adam 1e-4, 500,001 steps, curriculum (d 5->20, L 10->40)", garg!("12", "8", "256")),
    ("garg-linear-small", "garg-linear at 6 layers, 4 heads, n_embd 128", garg!("6", "4", "128")),
    ("garg-linear-tiny", "garg-linear at 3 layers, 2 heads, n_embd 64", garg!("3", "2", "64")),
];
