//! Garg et al. (2022)'s GPT-2 in-context learner on their function classes, trained with their
//! curriculum (d from 5, growing every 2000 steps), each at their sizes (standard 12 layers, 8
//! heads, n_embd 256; `-small` 6, 4, 128; `-tiny` 3, 2, 64) and with their `src/conf/*.yaml`:
//! linear regression (`task.kind = linear`: x ~ N(0, I_d), w ~ N(0, I_d), y = w.x without noise;
//! L from 10 to 40, +2 a stage), sparse linear functions (k = 3; the same L), two-layer ReLU
//! networks (100 hidden units) and depth-4 decision trees (L from 25 to 100, +5 a stage).
use super::Preset;

/// Overrides of a Garg et al. preset: their data, model and training, with the size's
/// (layers, heads, embd) and any further overrides.
macro_rules! garg {
    ($kind:literal, $layers:literal, $heads:literal, $embd:literal $(, $kv:expr)* $(,)?) => {
        &[
            ("model.arch", "gpt2"),
            ("task.kind", $kind),
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

/// The prompt lengths of the two-layer network and tree tasks: L from 25 to 100, +5 a stage
/// (their `points` 26 -> 101).
const LONG: [(&str, &str); 3] = [
    ("task.L", "100"),
    ("task.curriculum_L", "25"),
    ("task.curriculum_L_inc", "5"),
];

/// (name, description, overrides).
pub const PRESETS: &[Preset] = &[
    ("garg-linear", "Garg et al. (2022) GPT-2 on linear regression: d=20, L=40, 12 layers, 8 heads, n_embd 256, positions 101, batch 64, Adam 1e-4, 500,001 steps, curriculum (d 5->20, L 10->40)", garg!("linear", "12", "8", "256")),
    ("garg-linear-small", "garg-linear at 6 layers, 4 heads, n_embd 128", garg!("linear", "6", "4", "128")),
    ("garg-linear-tiny", "garg-linear at 3 layers, 2 heads, n_embd 64", garg!("linear", "3", "2", "64")),
    ("garg-sparse", "Garg et al. (2022) GPT-2 on sparse linear functions (k = 3 of d = 20 coordinates): garg-linear's model, data sizes and curriculum", garg!("sparse", "12", "8", "256", ("task.sparsity", "3"))),
    ("garg-sparse-small", "garg-sparse at 6 layers, 4 heads, n_embd 128", garg!("sparse", "6", "4", "128", ("task.sparsity", "3"))),
    ("garg-sparse-tiny", "garg-sparse at 3 layers, 2 heads, n_embd 64", garg!("sparse", "3", "2", "64", ("task.sparsity", "3"))),
    ("garg-relu2nn", "Garg et al. (2022) GPT-2 on two-layer ReLU networks (100 hidden units), d=20, L=100 (curriculum L 25->100, +5 every 2000 steps; d 5->20), 12 layers, 8 heads, n_embd 256", garg!("relu2nn", "12", "8", "256", ("task.hidden", "100"), LONG[0], LONG[1], LONG[2])),
    ("garg-relu2nn-small", "garg-relu2nn at 6 layers, 4 heads, n_embd 128", garg!("relu2nn", "6", "4", "128", ("task.hidden", "100"), LONG[0], LONG[1], LONG[2])),
    ("garg-relu2nn-tiny", "garg-relu2nn at 3 layers, 2 heads, n_embd 64", garg!("relu2nn", "3", "2", "64", ("task.hidden", "100"), LONG[0], LONG[1], LONG[2])),
    ("garg-tree", "Garg et al. (2022) GPT-2 on depth-4 decision trees, d=20, L=100 (curriculum L 25->100, +5 every 2000 steps; d 5->20), 12 layers, 8 heads, n_embd 256", garg!("tree", "12", "8", "256", ("task.depth", "4"), LONG[0], LONG[1], LONG[2])),
    ("garg-tree-small", "garg-tree at 6 layers, 4 heads, n_embd 128", garg!("tree", "6", "4", "128", ("task.depth", "4"), LONG[0], LONG[1], LONG[2])),
    ("garg-tree-tiny", "garg-tree at 3 layers, 2 heads, n_embd 64", garg!("tree", "3", "2", "64", ("task.depth", "4"), LONG[0], LONG[1], LONG[2])),
];
