//! Initialisation as Garg et al.'s `TransformerModel` starts: transformers' GPT-2
//! `_init_weights` for the backbone, PyTorch's `nn.Linear` default for read_in and read_out.
//!
//! | tensors | draw |
//! |---|---|
//! | `wpe`, `attn.c_attn.weight`, `mlp.c_fc.weight` | N(0, 0.02^2) |
//! | `attn.c_proj.weight`, `mlp.c_proj.weight` | N(0, (0.02 / sqrt(2 NL))^2) (GPT-2's scaled residual init) |
//! | `ln_*.weight` / `ln_*.bias` | 1 / 0 |
//! | Conv1D biases (`attn.c_attn.bias`, `attn.c_proj.bias`, `mlp.c_fc.bias`, `mlp.c_proj.bias`) | 0 |
//! | `read_in.weight`, `read_in.bias` | U(-1/sqrt(d), 1/sqrt(d)) |
//! | `read_out.weight`, `read_out.bias` | U(-1/sqrt(C), 1/sqrt(C)) |
//!
//! Every draw comes from the one stream `rng::stream(seed, Domain::Init, 0, 0)`, tensor after
//! tensor in [`Gpt2Spec::tensors`] order, row-major within a tensor (the layer index outermost):
//! a normal tensor of n values takes [`rng::fill_normal`] of n values (then scaled), a uniform
//! tensor n [`rng::uniform`]s `u` mapped to `b (2u - 1)`; a constant tensor draws nothing.
//! PyTorch's own generator is not reproduced: the distributions are.
use super::spec::Gpt2Spec;
use crate::rng::{self, Domain};
use crate::Scalar;
use alloc::vec;
use alloc::vec::Vec;

/// GPT-2's `initializer_range`.
pub const INIT_STD: f64 = 0.02;

/// How one tensor starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Draw {
    /// N(0, std^2).
    Normal(f64),
    /// U(-b, b).
    Uniform(f64),
    /// Every value equal.
    Const(f64),
}

/// The draw of the tensor named `name` (a name of [`Gpt2Spec::tensors`]).
pub fn draw_of(spec: &Gpt2Spec, name: &str) -> Draw {
    let resid = INIT_STD / libm::sqrt(2.0 * spec.layers as f64);
    match name {
        "wpe" | "attn.c_attn.weight" | "mlp.c_fc.weight" => Draw::Normal(INIT_STD),
        "attn.c_proj.weight" | "mlp.c_proj.weight" => Draw::Normal(resid),
        "ln_1.weight" | "ln_2.weight" | "ln_f.weight" => Draw::Const(1.0),
        "read_in.weight" | "read_in.bias" => Draw::Uniform(1.0 / libm::sqrt(spec.d as f64)),
        "read_out.weight" | "read_out.bias" => Draw::Uniform(1.0 / libm::sqrt(spec.embd as f64)),
        // LayerNorm and Conv1D biases
        _ => Draw::Const(0.0),
    }
}

/// Initial parameters of `spec` from `seed` (the module doc gives the draws and their order).
pub fn init_params<T: Scalar>(spec: &Gpt2Spec, seed: u64) -> Vec<T> {
    let mut r = rng::stream(seed, Domain::Init, 0, 0);
    let mut p = vec![0.0f64; spec.n_params()];
    for t in spec.tensors() {
        let v = &mut p[t.offset..t.offset + t.len()];
        match draw_of(spec, t.name) {
            Draw::Normal(s) => {
                rng::fill_normal(&mut r, v);
                v.iter_mut().for_each(|x| *x *= s);
            }
            Draw::Uniform(b) => v
                .iter_mut()
                .for_each(|x| *x = b * (2.0 * rng::uniform(&mut r) - 1.0)),
            Draw::Const(c) => v.iter_mut().for_each(|x| *x = c),
        }
    }
    p.iter().map(|&x| T::of(x)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        (
            m,
            libm::sqrt(v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n),
        )
    }

    #[test]
    fn gpt2_init_matches_gpt2_init_weights() {
        let spec = Gpt2Spec {
            d: 20,
            embd: 64,
            layers: 4,
            heads: 4,
            positions: 16,
            tau: 1.0,
        };
        let p: Vec<f64> = init_params(&spec, 3);
        assert_eq!(p.len(), spec.n_params());
        assert_eq!(p, init_params::<f64>(&spec, 3));
        assert_ne!(p, init_params::<f64>(&spec, 4));
        let resid = 0.02 / libm::sqrt(8.0);
        for t in spec.tensors() {
            let v = &p[t.offset..t.offset + t.len()];
            let (m, s) = stats(v);
            let n = v.len() as f64;
            match t.name {
                "ln_1.weight" | "ln_2.weight" | "ln_f.weight" => {
                    assert!(v.iter().all(|x| *x == 1.0), "{}", t.name)
                }
                n if n.ends_with("bias") && !n.starts_with("read_") => {
                    assert!(v.iter().all(|x| *x == 0.0), "{}", t.name)
                }
                "wpe" | "attn.c_attn.weight" | "mlp.c_fc.weight" | "attn.c_proj.weight"
                | "mlp.c_proj.weight" => {
                    let want = if t.name.ends_with("c_proj.weight") {
                        resid
                    } else {
                        0.02
                    };
                    // the sample std's standard error is std / sqrt(2 n); allow 5 of them
                    assert!(
                        (s - want).abs() < 5.0 * want / libm::sqrt(2.0 * n),
                        "{}: std {s}, want {want}",
                        t.name
                    );
                    assert!(m.abs() < 5.0 * want / libm::sqrt(n), "{}: mean {m}", t.name);
                }
                _ => {
                    // read_in / read_out: U(-b, b), every value inside, std b / sqrt(3)
                    let b = 1.0
                        / libm::sqrt(if t.name.starts_with("read_in") {
                            20.0
                        } else {
                            64.0
                        });
                    assert!(v.iter().all(|x| x.abs() <= b), "{}", t.name);
                    if v.len() >= 64 {
                        assert!(
                            (s - b / libm::sqrt(3.0)).abs() < 0.2 * b,
                            "{}: std {s}",
                            t.name
                        );
                    }
                }
            }
        }
        // f32 is the f64 draw rounded
        let p32: Vec<f32> = init_params(&spec, 3);
        assert!(p32.iter().zip(&p).all(|(a, b)| *a == *b as f32));
    }
}
