//! What a GPT-2 model attends to: every layer's and head's attention weights on one prompt, and
//! two summaries per head: the weight the x tokens give the label tokens (y_i, 0, .., 0), and
//! the weight a token gives itself.
use super::model::{self, Workspace};
use super::spec::Gpt2Spec;
use crate::{Result, Scalar};
use alloc::vec::Vec;

/// One head of one layer on one prompt of K pairs (T = 2K tokens).
#[derive(Debug, Clone, PartialEq)]
pub struct HeadAttention {
    pub layer: usize,
    pub head: usize,
    /// Row t holds the weights token t gives tokens 0..=t (`[T, T]`, zero above the diagonal).
    pub weights: Vec<f64>,
    /// The mean over the x tokens 2i (i >= 1) of the weight they give label tokens.
    pub y_mass: f64,
    /// The mean over every token of the weight it gives itself.
    pub self_mass: f64,
}

/// The attention of every layer and head on the prompt `xs: [K, d]`, `ys: [K]`.
pub fn attention<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    xs: &[T],
    ys: &[T],
    k: usize,
) -> Result<Vec<HeadAttention>> {
    let mut ws = Workspace::new();
    let mut preds = alloc::vec![T::zero(); k];
    model::forward(spec, params, xs, ys, k, &mut ws, &mut preds)?;
    let t = 2 * k;
    let mut out = Vec::new();
    for layer in 0..spec.layers {
        let att = ws.attention(layer);
        for head in 0..spec.heads {
            let w: Vec<f64> = att[head * t * t..(head + 1) * t * t]
                .iter()
                .map(|v| v.to_f64())
                .collect();
            let xs_rows: Vec<usize> = (1..k).map(|i| 2 * i).collect();
            let y_mass = xs_rows
                .iter()
                .map(|&r| {
                    (0..r)
                        .filter(|c| c % 2 == 1)
                        .map(|c| w[r * t + c])
                        .sum::<f64>()
                })
                .sum::<f64>()
                / xs_rows.len().max(1) as f64;
            let self_mass = (0..t).map(|r| w[r * t + r]).sum::<f64>() / t as f64;
            out.push(HeadAttention {
                layer,
                head,
                weights: w,
                y_mass,
                self_mass,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row is a distribution over the tokens before it (causal, sums to 1).
    #[test]
    fn attention_rows_are_causal_distributions() {
        let spec = Gpt2Spec {
            d: 2,
            embd: 8,
            layers: 2,
            heads: 2,
            positions: 4,
            tau: 1.0,
        };
        let p: Vec<f64> = super::super::init::init_params(&spec, 3);
        let xs = [0.5, -1.0, 1.5, 0.2, -0.3, 0.8];
        let ys = [1.0, -2.0, 0.5];
        let heads = attention(&spec, &p, &xs, &ys, 3).unwrap();
        assert_eq!(heads.len(), 4);
        for h in &heads {
            for r in 0..6 {
                let row = &h.weights[r * 6..(r + 1) * 6];
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                assert!(row[r + 1..].iter().all(|&v| v == 0.0));
            }
            assert!((0.0..=1.0).contains(&h.y_mass) && (0.0..=1.0).contains(&h.self_mass));
        }
        assert!((heads[0].weights[0] - 1.0).abs() < 1e-12);
    }
}
