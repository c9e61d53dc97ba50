//! The configuration section of the GPT-2 in-context learner: its shape (everything but the
//! parameter values), its parameter layout, its size and its cost.
use crate::tensor::{layout, TensorInfo};
use crate::{Error, Result};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Shape and options of a GPT-2 in-context learner (Garg et al. 2022's `TransformerModel`).
#[derive(Debug, Clone, PartialEq)]
pub struct Gpt2Spec {
    /// Covariate dimension d (the width of every token).
    pub d: usize,
    /// Residual stream width C (`n_embd`).
    pub embd: usize,
    /// Number of blocks NL (`n_layer`).
    pub layers: usize,
    /// Attention heads H per block (`n_head`); each reads hd = C / H columns.
    pub heads: usize,
    /// Prompt pairs P the position table holds (`wpe` has 2P rows, `n_positions = 2P`).
    pub positions: usize,
    /// Attention temperature tau: every logit of every layer and head is divided by it (1 is
    /// GPT-2 itself).
    pub tau: f64,
}

/// LayerNorm's epsilon (`layer_norm_epsilon` of transformers' GPT2Config).
pub const LN_EPS: f64 = 1e-5;

impl Gpt2Spec {
    /// Width of one head, hd = C / H.
    #[inline]
    pub fn head_dim(&self) -> usize {
        self.embd / self.heads
    }

    /// The named tensors of the flat parameter buffer, in order (the family's doc has the table).
    /// A layer-stacked tensor `[NL, a, b]` holds layer l's `[a, b]` at `l a b`, exactly
    /// `_backbone.h.{l}.…` of the PyTorch model.
    pub fn tensors(&self) -> Vec<TensorInfo> {
        let (d, c, nl, p) = (self.d, self.embd, self.layers, self.positions);
        layout(vec![
            ("read_in.weight", vec![c, d]),
            ("read_in.bias", vec![c]),
            ("wpe", vec![2 * p, c]),
            ("ln_1.weight", vec![nl, c]),
            ("ln_1.bias", vec![nl, c]),
            ("attn.c_attn.weight", vec![nl, c, 3 * c]),
            ("attn.c_attn.bias", vec![nl, 3 * c]),
            ("attn.c_proj.weight", vec![nl, c, c]),
            ("attn.c_proj.bias", vec![nl, c]),
            ("ln_2.weight", vec![nl, c]),
            ("ln_2.bias", vec![nl, c]),
            ("mlp.c_fc.weight", vec![nl, c, 4 * c]),
            ("mlp.c_fc.bias", vec![nl, 4 * c]),
            ("mlp.c_proj.weight", vec![nl, 4 * c, c]),
            ("mlp.c_proj.bias", vec![nl, c]),
            ("ln_f.weight", vec![c]),
            ("ln_f.bias", vec![c]),
            ("read_out.weight", vec![1, c]),
            ("read_out.bias", vec![1]),
        ])
    }

    /// Number of parameters: `C d + C + 2 P C + NL (12 C^2 + 13 C) + 3 C + 1`.
    pub fn n_params(&self) -> usize {
        let (d, c, nl, p) = (self.d, self.embd, self.layers, self.positions);
        c * d + c + 2 * p * c + nl * (12 * c * c + 13 * c) + 3 * c + 1
    }

    /// Check the shape rules: every size > 0, C a multiple of H, tau finite and > 0.
    pub fn validate(&self) -> Result<()> {
        let sizes = [
            ("d", self.d),
            ("embd", self.embd),
            ("layers", self.layers),
            ("heads", self.heads),
            ("positions", self.positions),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(Error::InvalidConfig(format!(
                "gpt2: {name} = 0; every size (d, embd, layers, heads, positions) must be at least 1"
            )));
        }
        if !self.embd.is_multiple_of(self.heads) {
            return Err(Error::InvalidConfig(format!(
                "gpt2: embd = {} is not a multiple of heads = {}; choose embd = k heads (e.g. {}) or heads dividing {}",
                self.embd,
                self.heads,
                self.embd.div_ceil(self.heads) * self.heads,
                self.embd
            )));
        }
        crate::tempered::check_tau(self.tau)?;
        Ok(())
    }

    /// Check a prompt of `k` pairs against the position table: `1 <= k <= P`.
    pub fn check_pairs(&self, k: usize) -> Result<()> {
        if k == 0 || k > self.positions {
            return Err(Error::Shape(format!(
                "gpt2: a prompt of K = {k} pairs needs 1 <= K <= positions = {} (raise positions to at least {k})",
                self.positions
            )));
        }
        Ok(())
    }

    /// Matrix floating-point operations of one sequence's forward pass over K pairs (T = 2K
    /// tokens; a multiply-add counts 2):
    /// ```text
    /// read_in   2 T d C
    /// per layer 2 T C 3C (c_attn) + 2 C T(T+1) (causal q.k and p v, T(T+1)/2 pairs of tokens)
    ///           + 2 T C C (attn c_proj) + 2 T C 4C (c_fc) + 2 T 4C C (mlp c_proj)
    ///         = 24 T C^2 + 2 C T (T + 1)
    /// read_out  2 T C
    /// ```
    /// LayerNorm, GELU, softmax and the residual adds are not counted.
    pub fn forward_flops(&self, pairs: usize) -> f64 {
        let (d, c, nl) = (self.d as f64, self.embd as f64, self.layers as f64);
        let t = 2.0 * pairs as f64;
        2.0 * t * d * c + nl * (24.0 * t * c * c + 2.0 * c * t * (t + 1.0)) + 2.0 * t * c
    }

    /// Floating-point operations of one training step's forward + backward at context length
    /// `len` (K = len + 1 pairs) over `batch` sequences: `3 forward_flops(K) batch` (the backward
    /// of every matrix product costs twice its forward: one product for the input's gradient,
    /// one for the weight's). Data generation is not counted.
    pub fn step_flops(&self, len: usize, batch: usize) -> f64 {
        3.0 * self.forward_flops(len + 1) * batch as f64
    }

    /// Values one sequence's [`super::model::Workspace`] holds at K pairs (T = 2K tokens):
    /// ```text
    /// forward   T d (tokens)
    ///           + NL (16 T C + 4 T + H T^2)   per block: h, ln_1, a, ln_2 (4 T C), qkv (3 T C),
    ///                                         the heads' mix (T C), c_fc before and after GELU
    ///                                         (8 T C), two LayerNorms' mean and 1/std (4 T), the
    ///                                         attention weights (H T^2)
    ///           + 3 T C + 3 T + K              the last stream, ln_f, c_proj's output; ln_f's
    ///                                         statistics, read_out's output; the predictions
    /// backward  15 T C + 2 T + K              the gradients of two streams, a c_proj output and a
    ///                                         LayerNorm output (4 T C), of qkv (3 T C), of c_fc
    ///                                         before and after GELU (8 T C); one row of weights,
    ///                                         read_out's output (2 T); the predictions (K)
    /// ```
    /// `None` when the count overflows.
    pub fn workspace_values(&self, pairs: usize) -> Option<u64> {
        let (d, c, h, nl) = (
            self.d as u64,
            self.embd as u64,
            self.heads as u64,
            self.layers as u64,
        );
        let k = pairs as u64;
        let t = k.checked_mul(2)?;
        let tc = t.checked_mul(c)?;
        let block = tc
            .checked_mul(16)?
            .checked_add(t.checked_mul(4)?)?
            .checked_add(h.checked_mul(t)?.checked_mul(t)?)?;
        let fwd = t
            .checked_mul(d)?
            .checked_add(nl.checked_mul(block)?)?
            .checked_add(tc.checked_mul(3)?)?
            .checked_add(t.checked_mul(3)?)?
            .checked_add(k)?;
        let bwd = tc
            .checked_mul(15)?
            .checked_add(t.checked_mul(2)?)?
            .checked_add(k)?;
        fwd.checked_add(bwd)
    }

    /// Bytes of the activations a training step at context length `len` (K = len + 1 pairs)
    /// holds over `batch` sequences, every value counted as f64 (an upper bound for f32): one
    /// [`Gpt2Spec::workspace_values`] per sequence (what an engine running the batch at once
    /// keeps; the scalar reference runs one sequence at a time and keeps one). `None` on overflow.
    pub fn memory_bytes(&self, len: usize, batch: usize) -> Option<u64> {
        self.workspace_values(len.checked_add(1)?)?
            .checked_mul(batch as u64)?
            .checked_mul(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Gpt2Spec {
        Gpt2Spec {
            d: 3,
            embd: 8,
            layers: 2,
            heads: 2,
            positions: 4,
            tau: 1.0,
        }
    }

    #[test]
    fn gpt2_layout_is_contiguous_and_counts_n_params() {
        let s = spec();
        let ts = s.tensors();
        assert_eq!(ts.len(), 19);
        let mut off = 0;
        for t in &ts {
            assert_eq!(t.offset, off, "{}", t.name);
            off += t.len();
        }
        assert_eq!(off, s.n_params());
        assert_eq!(ts[5].name, "attn.c_attn.weight");
        assert_eq!(ts[5].shape, vec![2, 8, 24]);
        assert_eq!(ts[18].shape, vec![1]);
    }

    #[test]
    fn gpt2_validate_names_the_fix() {
        assert!(spec().validate().is_ok());
        let bad = Gpt2Spec {
            embd: 10,
            heads: 3,
            ..spec()
        };
        match bad.validate() {
            Err(Error::InvalidConfig(m)) => assert!(m.contains("multiple of heads"), "{m}"),
            other => panic!("{other:?}"),
        }
        for s in [
            Gpt2Spec { d: 0, ..spec() },
            Gpt2Spec {
                layers: 0,
                ..spec()
            },
            Gpt2Spec { heads: 0, ..spec() },
            Gpt2Spec {
                positions: 0,
                ..spec()
            },
        ] {
            assert!(
                matches!(s.validate(), Err(Error::InvalidConfig(_))),
                "{s:?}"
            );
        }
        assert!(Gpt2Spec { tau: 0.0, ..spec() }.validate().is_err());
        assert!(Gpt2Spec {
            tau: f64::NAN,
            ..spec()
        }
        .validate()
        .is_err());
        assert!(spec().check_pairs(4).is_ok());
        assert!(matches!(spec().check_pairs(5), Err(Error::Shape(_))));
        assert!(spec().check_pairs(0).is_err());
    }

    #[test]
    fn gpt2_flops_count_the_matrix_products() {
        // one layer, d = 1, C = 2, H = 1, K = 1 (T = 2): read_in 2*2*1*2 = 8; layer
        // 24*2*4 + 2*2*2*3 = 192 + 24 = 216; read_out 2*2*2 = 8
        let s = Gpt2Spec {
            d: 1,
            embd: 2,
            layers: 1,
            heads: 1,
            positions: 1,
            tau: 1.0,
        };
        assert_eq!(s.forward_flops(1), 232.0);
        assert_eq!(s.step_flops(0, 5), 3.0 * 232.0 * 5.0);
        assert!(s.memory_bytes(usize::MAX, 2).is_none());
    }
}
