//! The whole model over one prompt: named views of the flat parameters, the activations one
//! sequence keeps ([`Workspace`]), the forward pass ([`forward`]) and the loss with its gradient
//! ([`loss_grad`]). Every shape is checked once, at the entry; the passes below it assume them.
//!
//! Forward (T = 2K tokens of width d, C columns, NL blocks), as [`super::ops`] pairs:
//! ```text
//! tok      = x_0, (y_0, 0..0), x_1, (y_1, 0..0), ...             [T, d]
//! h        = tok read_in.weight^T + read_in.bias + wpe[..T]        [T, C]
//! per block l:
//!   a      = h + c_proj(attn(c_attn(ln_1(h))))
//!   h      = a + mlp.c_proj(gelu_new(c_fc(ln_2(a))))
//! out      = ln_f(h) read_out.weight^T + read_out.bias             [T]
//! pred_i   = out[2 i]                                               [K]
//! loss     = w sum_i (pred_i - y_i)^2
//! ```
use super::ops;
use super::spec::Gpt2Spec;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec::Vec;

/// Named views of the flat parameter buffer (or of its gradient), in the order of
/// [`Gpt2Spec::tensors`]; `S` is `&[T]` or `&mut [T]`. Layer-stacked views hold every layer:
/// [`layer`] cuts out one.
#[derive(Debug)]
pub struct Gpt2Tensors<S> {
    pub read_in_w: S,
    pub read_in_b: S,
    pub wpe: S,
    pub ln_1_w: S,
    pub ln_1_b: S,
    pub c_attn_w: S,
    pub c_attn_b: S,
    pub attn_proj_w: S,
    pub attn_proj_b: S,
    pub ln_2_w: S,
    pub ln_2_b: S,
    pub c_fc_w: S,
    pub c_fc_b: S,
    pub mlp_proj_w: S,
    pub mlp_proj_b: S,
    pub ln_f_w: S,
    pub ln_f_b: S,
    pub read_out_w: S,
    pub read_out_b: S,
}

/// Layer `l`'s slice of a layer-stacked tensor (`[NL, ...]`, `per` values a layer).
#[inline]
pub fn layer<T>(s: &[T], l: usize, per: usize) -> &[T] {
    &s[l * per..(l + 1) * per]
}

/// Layer `l`'s slice of a layer-stacked gradient.
#[inline]
pub fn layer_mut<T>(s: &mut [T], l: usize, per: usize) -> &mut [T] {
    &mut s[l * per..(l + 1) * per]
}

fn check_len(spec: &Gpt2Spec, what: &str, len: usize) -> Result<()> {
    if len != spec.n_params() {
        return Err(Error::Shape(format!(
            "gpt2: {what} has {len} values, the model {} (d = {}, embd = {}, layers = {}, positions = {})",
            spec.n_params(),
            spec.d,
            spec.embd,
            spec.layers,
            spec.positions
        )));
    }
    Ok(())
}

impl<'a, T> Gpt2Tensors<&'a [T]> {
    /// The views of `buf`, which must hold [`Gpt2Spec::n_params`] values.
    pub fn new(spec: &Gpt2Spec, buf: &'a [T]) -> Result<Self> {
        check_len(spec, "the parameter buffer", buf.len())?;
        let ts = spec.tensors();
        let v = move |i: usize| &buf[ts[i].offset..ts[i].offset + ts[i].len()];
        Ok(Gpt2Tensors {
            read_in_w: v(0),
            read_in_b: v(1),
            wpe: v(2),
            ln_1_w: v(3),
            ln_1_b: v(4),
            c_attn_w: v(5),
            c_attn_b: v(6),
            attn_proj_w: v(7),
            attn_proj_b: v(8),
            ln_2_w: v(9),
            ln_2_b: v(10),
            c_fc_w: v(11),
            c_fc_b: v(12),
            mlp_proj_w: v(13),
            mlp_proj_b: v(14),
            ln_f_w: v(15),
            ln_f_b: v(16),
            read_out_w: v(17),
            read_out_b: v(18),
        })
    }
}

impl<'a, T> Gpt2Tensors<&'a mut [T]> {
    /// The mutable views of `buf` (a gradient), which must hold [`Gpt2Spec::n_params`] values.
    pub fn new_mut(spec: &Gpt2Spec, buf: &'a mut [T]) -> Result<Self> {
        check_len(spec, "the gradient buffer", buf.len())?;
        let mut rest = buf;
        let mut it = spec.tensors().into_iter().map(move |t| {
            let (a, b) = core::mem::take(&mut rest).split_at_mut(t.len());
            rest = b;
            a
        });
        let mut v = || it.next().unwrap_or_default();
        Ok(Gpt2Tensors {
            read_in_w: v(),
            read_in_b: v(),
            wpe: v(),
            ln_1_w: v(),
            ln_1_b: v(),
            c_attn_w: v(),
            c_attn_b: v(),
            attn_proj_w: v(),
            attn_proj_b: v(),
            ln_2_w: v(),
            ln_2_b: v(),
            c_fc_w: v(),
            c_fc_b: v(),
            mlp_proj_w: v(),
            mlp_proj_b: v(),
            ln_f_w: v(),
            ln_f_b: v(),
            read_out_w: v(),
            read_out_b: v(),
        })
    }
}

/// What one block keeps for the backward (T tokens, C columns, H heads).
#[derive(Debug, Clone, Default)]
struct BlockActs<T> {
    /// The block's input stream h `[T, C]`.
    h: Vec<T>,
    /// ln_1(h) `[T, C]`, its mean and 1/std `[T]`.
    ln1: Vec<T>,
    ln1_mean: Vec<T>,
    ln1_rstd: Vec<T>,
    /// c_attn's output q | k | v `[T, 3C]`.
    qkv: Vec<T>,
    /// Attention weights p `[H, T, T]`.
    att: Vec<T>,
    /// The heads' mix, concatenated `[T, C]`.
    atty: Vec<T>,
    /// a = h + attention `[T, C]`.
    a: Vec<T>,
    /// ln_2(a) `[T, C]`, its mean and 1/std `[T]`.
    ln2: Vec<T>,
    ln2_mean: Vec<T>,
    ln2_rstd: Vec<T>,
    /// c_fc's output `[T, 4C]`, and after GELU.
    fch: Vec<T>,
    fch_gelu: Vec<T>,
}

fn size<T: Scalar>(v: &mut Vec<T>, n: usize) {
    v.clear();
    v.resize(n, T::zero());
}

impl<T: Scalar> BlockActs<T> {
    fn resize(&mut self, t: usize, c: usize, h: usize) {
        for (v, n) in [
            (&mut self.h, t * c),
            (&mut self.ln1, t * c),
            (&mut self.ln1_mean, t),
            (&mut self.ln1_rstd, t),
            (&mut self.qkv, 3 * t * c),
            (&mut self.att, h * t * t),
            (&mut self.atty, t * c),
            (&mut self.a, t * c),
            (&mut self.ln2, t * c),
            (&mut self.ln2_mean, t),
            (&mut self.ln2_rstd, t),
            (&mut self.fch, 4 * t * c),
            (&mut self.fch_gelu, 4 * t * c),
        ] {
            size(v, n);
        }
    }

    fn len(&self) -> usize {
        [
            &self.h,
            &self.ln1,
            &self.ln1_mean,
            &self.ln1_rstd,
            &self.qkv,
            &self.att,
            &self.atty,
            &self.a,
            &self.ln2,
            &self.ln2_mean,
            &self.ln2_rstd,
            &self.fch,
            &self.fch_gelu,
        ]
        .iter()
        .map(|v| v.len())
        .sum()
    }
}

/// The activations of one sequence (forward) and the backward's buffers; sized on each call for
/// the prompt at hand, reused across calls.
#[derive(Debug, Clone, Default)]
pub struct Workspace<T> {
    /// The tokens `[T, d]`.
    tok: Vec<T>,
    blocks: Vec<BlockActs<T>>,
    /// The last block's output stream `[T, C]`, ln_f of it, its mean and 1/std `[T]`.
    hf: Vec<T>,
    lnf: Vec<T>,
    lnf_mean: Vec<T>,
    lnf_rstd: Vec<T>,
    /// c_proj's output before the residual add `[T, C]` (both c_proj of every block).
    proj: Vec<T>,
    /// read_out at every token `[T]`.
    out: Vec<T>,
    /// The predictions `[K]` (`out` at the x tokens).
    preds: Vec<T>,
    // the backward's buffers: gradients of a block's output stream, of a, of a c_proj output
    // [T, C]; of a LayerNorm's output [T, C]; of qkv [T, 3C]; of c_fc's output before and after
    // GELU [T, 4C]; one row of attention weights [T]; of out [T] and of the predictions [K]
    dres: Vec<T>,
    dres2: Vec<T>,
    dproj: Vec<T>,
    dln: Vec<T>,
    dqkv: Vec<T>,
    dfch: Vec<T>,
    dfch_gelu: Vec<T>,
    drow: Vec<T>,
    dout: Vec<T>,
    dpreds: Vec<T>,
}

impl<T: Scalar> Workspace<T> {
    pub fn new() -> Self {
        Workspace::default()
    }

    /// The predictions of the last [`forward`] or [`loss_grad`] (`[K]`).
    pub fn preds(&self) -> &[T] {
        &self.preds
    }

    /// The attention weights of block `layer` in the last pass, `[H, T, T]` (row t: the weights
    /// token t gives tokens 0..=t; zero above the diagonal); empty for a layer the model lacks.
    pub fn attention(&self, layer: usize) -> &[T] {
        self.blocks.get(layer).map_or(&[], |b| &b.att[..])
    }

    /// Values held ([`Gpt2Spec::workspace_values`] after a pass over the same K).
    pub fn len(&self) -> usize {
        let own = [
            &self.tok,
            &self.hf,
            &self.lnf,
            &self.lnf_mean,
            &self.lnf_rstd,
            &self.proj,
            &self.out,
            &self.preds,
            &self.dres,
            &self.dres2,
            &self.dproj,
            &self.dln,
            &self.dqkv,
            &self.dfch,
            &self.dfch_gelu,
            &self.drow,
            &self.dout,
            &self.dpreds,
        ];
        own.iter().map(|v| v.len()).sum::<usize>()
            + self.blocks.iter().map(|b| b.len()).sum::<usize>()
    }

    /// Whether nothing is held yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn resize(&mut self, spec: &Gpt2Spec, k: usize) {
        let (d, c, h, t) = (spec.d, spec.embd, spec.heads, 2 * k);
        self.blocks.resize_with(spec.layers, BlockActs::default);
        for b in &mut self.blocks {
            b.resize(t, c, h);
        }
        for (v, n) in [
            (&mut self.tok, t * d),
            (&mut self.hf, t * c),
            (&mut self.lnf, t * c),
            (&mut self.lnf_mean, t),
            (&mut self.lnf_rstd, t),
            (&mut self.proj, t * c),
            (&mut self.out, t),
            (&mut self.preds, k),
            (&mut self.dres, t * c),
            (&mut self.dres2, t * c),
            (&mut self.dproj, t * c),
            (&mut self.dln, t * c),
            (&mut self.dqkv, 3 * t * c),
            (&mut self.dfch, 4 * t * c),
            (&mut self.dfch_gelu, 4 * t * c),
            (&mut self.drow, t),
            (&mut self.dout, t),
            (&mut self.dpreds, k),
        ] {
            size(v, n);
        }
    }
}

/// Check one prompt's buffers: `xs: [K, d]`, `ys: [K]`, `1 <= K <= P`, the spec and the parameter
/// count.
fn check_prompt<T>(spec: &Gpt2Spec, params: &[T], xs: &[T], ys: &[T], k: usize) -> Result<()> {
    spec.validate()?;
    check_len(spec, "the parameter buffer", params.len())?;
    spec.check_pairs(k)?;
    if xs.len() != k * spec.d || ys.len() != k {
        return Err(Error::Shape(format!(
            "gpt2: a prompt of K = {k} pairs at d = {} needs {} x values and {k} y values, got {} and {}",
            spec.d,
            k * spec.d,
            xs.len(),
            ys.len()
        )));
    }
    Ok(())
}

/// Token 2i is x_i, token 2i + 1 is (y_i, 0, .., 0) (Garg et al.'s `_combine`): `tok: [2K, d]`.
pub fn write_tokens<T: Scalar>(tok: &mut [T], xs: &[T], ys: &[T], k: usize, d: usize) {
    for i in 0..k {
        tok[2 * i * d..][..d].copy_from_slice(&xs[i * d..][..d]);
        let y = &mut tok[(2 * i + 1) * d..][..d];
        y.iter_mut().for_each(|v| *v = T::zero());
        y[0] = ys[i];
    }
}

/// The forward pass over K pairs (shapes checked by the caller), keeping every activation in
/// `ws`; the predictions end in `ws.preds`.
fn run_forward<T: Scalar>(
    spec: &Gpt2Spec,
    p: &Gpt2Tensors<&[T]>,
    xs: &[T],
    ys: &[T],
    k: usize,
    ws: &mut Workspace<T>,
) {
    let (d, c, nh, t) = (spec.d, spec.embd, spec.heads, 2 * k);
    ws.resize(spec, k);
    let Workspace {
        tok,
        blocks,
        hf,
        lnf,
        lnf_mean,
        lnf_rstd,
        proj,
        out,
        preds,
        ..
    } = ws;
    write_tokens(tok, xs, ys, k, d);
    // h = read_in(tok) + wpe
    let h0: &mut [T] = match blocks.first_mut() {
        Some(b) => &mut b.h,
        None => hf,
    };
    ops::linear_forward(h0, tok, p.read_in_w, p.read_in_b, t, d, c);
    ops::position_forward(h0, p.wpe, t, c);
    for l in 0..spec.layers {
        let (cur, rest) = blocks.split_at_mut(l + 1);
        let b = &mut cur[l];
        let next: &mut [T] = match rest.first_mut() {
            Some(n) => &mut n.h,
            None => hf,
        };
        // a = h + attn.c_proj(attn(c_attn(ln_1(h))))
        ops::layernorm_forward(
            &mut b.ln1,
            &mut b.ln1_mean,
            &mut b.ln1_rstd,
            &b.h,
            layer(p.ln_1_w, l, c),
            layer(p.ln_1_b, l, c),
            t,
            c,
        );
        ops::conv1d_forward(
            &mut b.qkv,
            &b.ln1,
            layer(p.c_attn_w, l, 3 * c * c),
            layer(p.c_attn_b, l, 3 * c),
            t,
            c,
            3 * c,
        );
        ops::attention_forward(&mut b.atty, &mut b.att, &b.qkv, t, c, nh, spec.tau);
        ops::conv1d_forward(
            proj,
            &b.atty,
            layer(p.attn_proj_w, l, c * c),
            layer(p.attn_proj_b, l, c),
            t,
            c,
            c,
        );
        ops::residual_forward(&mut b.a, &b.h, proj);
        // h' = a + mlp.c_proj(gelu_new(c_fc(ln_2(a))))
        ops::layernorm_forward(
            &mut b.ln2,
            &mut b.ln2_mean,
            &mut b.ln2_rstd,
            &b.a,
            layer(p.ln_2_w, l, c),
            layer(p.ln_2_b, l, c),
            t,
            c,
        );
        ops::conv1d_forward(
            &mut b.fch,
            &b.ln2,
            layer(p.c_fc_w, l, 4 * c * c),
            layer(p.c_fc_b, l, 4 * c),
            t,
            c,
            4 * c,
        );
        ops::gelu_forward(&mut b.fch_gelu, &b.fch);
        ops::conv1d_forward(
            proj,
            &b.fch_gelu,
            layer(p.mlp_proj_w, l, 4 * c * c),
            layer(p.mlp_proj_b, l, c),
            t,
            4 * c,
            c,
        );
        ops::residual_forward(next, &b.a, proj);
    }
    // out = read_out(ln_f(h)); pred_i = out[2 i]
    ops::layernorm_forward(lnf, lnf_mean, lnf_rstd, hf, p.ln_f_w, p.ln_f_b, t, c);
    ops::linear_forward(out, lnf, p.read_out_w, p.read_out_b, t, c, 1);
    ops::select_forward(preds, out, k);
}

/// The backward pass of [`run_forward`] from `ws.dpreds`, accumulating into `g`.
fn run_backward<T: Scalar>(
    spec: &Gpt2Spec,
    p: &Gpt2Tensors<&[T]>,
    k: usize,
    ws: &mut Workspace<T>,
    g: &mut Gpt2Tensors<&mut [T]>,
) {
    let (d, c, nh, t) = (spec.d, spec.embd, spec.heads, 2 * k);
    let Workspace {
        tok,
        blocks,
        hf,
        lnf,
        lnf_mean,
        lnf_rstd,
        dres,
        dres2,
        dproj,
        dln,
        dqkv,
        dfch,
        dfch_gelu,
        drow,
        dout,
        dpreds,
        ..
    } = ws;
    let zero = |v: &mut [T]| v.iter_mut().for_each(|x| *x = T::zero());
    // pred_i = out[2 i]
    zero(dout);
    ops::select_backward(dout, dpreds, k);
    // out = read_out(ln_f(h))
    zero(dln);
    ops::linear_backward(
        Some(&mut dln[..]),
        g.read_out_w,
        g.read_out_b,
        dout,
        lnf,
        p.read_out_w,
        t,
        c,
        1,
    );
    zero(dres);
    ops::layernorm_backward(
        dres, g.ln_f_w, g.ln_f_b, dln, hf, p.ln_f_w, lnf_mean, lnf_rstd, t, c,
    );
    // dres holds the gradient of block l's output stream
    for l in (0..spec.layers).rev() {
        let b = &blocks[l];
        // h' = a + proj: da += dh', dproj += dh'
        zero(dres2);
        zero(dproj);
        ops::residual_backward(dres2, dproj, dres);
        // proj = mlp.c_proj(fch_gelu)
        zero(dfch_gelu);
        ops::conv1d_backward(
            dfch_gelu,
            layer_mut(g.mlp_proj_w, l, 4 * c * c),
            layer_mut(g.mlp_proj_b, l, c),
            dproj,
            &b.fch_gelu,
            layer(p.mlp_proj_w, l, 4 * c * c),
            t,
            4 * c,
            c,
        );
        // fch_gelu = gelu_new(fch)
        zero(dfch);
        ops::gelu_backward(dfch, &b.fch, dfch_gelu);
        // fch = c_fc(ln2)
        zero(dln);
        ops::conv1d_backward(
            dln,
            layer_mut(g.c_fc_w, l, 4 * c * c),
            layer_mut(g.c_fc_b, l, 4 * c),
            dfch,
            &b.ln2,
            layer(p.c_fc_w, l, 4 * c * c),
            t,
            c,
            4 * c,
        );
        // ln2 = ln_2(a)
        ops::layernorm_backward(
            dres2,
            layer_mut(g.ln_2_w, l, c),
            layer_mut(g.ln_2_b, l, c),
            dln,
            &b.a,
            layer(p.ln_2_w, l, c),
            &b.ln2_mean,
            &b.ln2_rstd,
            t,
            c,
        );
        // a = h + proj: dh += da, dproj += da
        zero(dres);
        zero(dproj);
        ops::residual_backward(dres, dproj, dres2);
        // proj = attn.c_proj(atty); dres2 is free again and takes d atty
        zero(dres2);
        ops::conv1d_backward(
            dres2,
            layer_mut(g.attn_proj_w, l, c * c),
            layer_mut(g.attn_proj_b, l, c),
            dproj,
            &b.atty,
            layer(p.attn_proj_w, l, c * c),
            t,
            c,
            c,
        );
        // atty = attn(qkv)
        zero(dqkv);
        ops::attention_backward(dqkv, drow, dres2, &b.qkv, &b.att, t, c, nh, spec.tau);
        // qkv = c_attn(ln1)
        zero(dln);
        ops::conv1d_backward(
            dln,
            layer_mut(g.c_attn_w, l, 3 * c * c),
            layer_mut(g.c_attn_b, l, 3 * c),
            dqkv,
            &b.ln1,
            layer(p.c_attn_w, l, 3 * c * c),
            t,
            c,
            3 * c,
        );
        // ln1 = ln_1(h)
        ops::layernorm_backward(
            dres,
            layer_mut(g.ln_1_w, l, c),
            layer_mut(g.ln_1_b, l, c),
            dln,
            &b.h,
            layer(p.ln_1_w, l, c),
            &b.ln1_mean,
            &b.ln1_rstd,
            t,
            c,
        );
    }
    // h = read_in(tok) + wpe (the tokens are data: no gradient)
    ops::position_backward(g.wpe, dres, t, c);
    ops::linear_backward(
        None,
        g.read_in_w,
        g.read_in_b,
        dres,
        tok,
        p.read_in_w,
        t,
        d,
        c,
    );
}

/// Predictions of one prompt of K pairs: `xs: [K, d]`, `ys: [K]` (y_{K-1}, after the last x
/// token, never reaches a prediction), `preds: [K]` (`preds[i]` reads pairs 0..i-1 and x_i).
#[allow(clippy::too_many_arguments)]
pub fn forward<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    xs: &[T],
    ys: &[T],
    k: usize,
    ws: &mut Workspace<T>,
    preds: &mut [T],
) -> Result<()> {
    check_prompt(spec, params, xs, ys, k)?;
    if preds.len() != k {
        return Err(Error::Shape(format!(
            "gpt2: the prediction buffer has {} values, K = {k} needed",
            preds.len()
        )));
    }
    let p = Gpt2Tensors::new(spec, params)?;
    run_forward(spec, &p, xs, ys, k, ws);
    preds.copy_from_slice(&ws.preds);
    Ok(())
}

/// Loss of one prompt, `weight sum_i (pred_i - y_i)^2` over its K positions, and its gradient
/// accumulated into `grad` (weight 1 / (n K) over a batch of n makes the sum of the returns the
/// mean squared error and the sum of the gradients its gradient).
#[allow(clippy::too_many_arguments)]
pub fn loss_grad<T: Scalar>(
    spec: &Gpt2Spec,
    params: &[T],
    xs: &[T],
    ys: &[T],
    k: usize,
    weight: T,
    ws: &mut Workspace<T>,
    grad: &mut [T],
) -> Result<T> {
    check_prompt(spec, params, xs, ys, k)?;
    let p = Gpt2Tensors::new(spec, params)?;
    let mut g = Gpt2Tensors::new_mut(spec, grad)?;
    run_forward(spec, &p, xs, ys, k, ws);
    let loss = ops::mse_forward(&ws.preds, ys, weight);
    ws.dpreds.iter_mut().for_each(|x| *x = T::zero());
    ops::mse_backward(&mut ws.dpreds, &ws.preds, ys, weight);
    run_backward(spec, &p, k, ws, &mut g);
    Ok(loss)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::{self, Domain};
    use alloc::vec;

    pub(crate) fn small() -> Gpt2Spec {
        Gpt2Spec {
            d: 3,
            embd: 8,
            layers: 2,
            heads: 2,
            positions: 4,
            tau: 0.8,
        }
    }

    /// Parameters at a scale where every op is in its interesting range: N(0, 0.3^2) everywhere,
    /// LayerNorm weights 1 + N(0, 0.3^2).
    pub(crate) fn random_params(spec: &Gpt2Spec, seed: u64) -> Vec<f64> {
        let mut r = rng::stream(seed, Domain::Eval, 1, 0);
        let mut p = vec![0.0; spec.n_params()];
        rng::fill_normal(&mut r, &mut p);
        p.iter_mut().for_each(|v| *v *= 0.3);
        for t in spec.tensors() {
            if t.name.starts_with("ln_") && t.name.ends_with(".weight") {
                p[t.offset..t.offset + t.len()]
                    .iter_mut()
                    .for_each(|v| *v += 1.0);
            }
        }
        p
    }

    pub(crate) fn prompt(spec: &Gpt2Spec, k: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut r = rng::stream(seed, Domain::Eval, 2, 0);
        let mut xs = vec![0.0; k * spec.d];
        let mut ys = vec![0.0; k];
        rng::fill_normal(&mut r, &mut xs);
        rng::fill_normal(&mut r, &mut ys);
        (xs, ys)
    }

    #[test]
    fn gpt2_loss_grad_matches_fd_over_all_parameters() {
        let spec = small();
        let k = 3;
        let params = random_params(&spec, 1);
        let (xs, ys) = prompt(&spec, k, 2);
        let w = 1.0 / k as f64;
        let mut ws = Workspace::new();
        let mut grad = vec![0.0; spec.n_params()];
        let loss = loss_grad(&spec, &params, &xs, &ys, k, w, &mut ws, &mut grad).unwrap();
        // the returned loss is the weighted squared error of the predictions
        let mut preds = vec![0.0; k];
        forward(&spec, &params, &xs, &ys, k, &mut ws, &mut preds).unwrap();
        let want: f64 = preds.iter().zip(&ys).map(|(p, y)| (p - y) * (p - y)).sum();
        assert!((loss - w * want).abs() < 1e-14 * (1.0 + loss));
        let mut f = |p: &[f64]| {
            let mut g = vec![0.0; p.len()];
            loss_grad(&spec, p, &xs, &ys, k, w, &mut ws, &mut g).unwrap()
        };
        let e = crate::fd::rel_error(&mut f, &params, &grad, 1e-6, 1e-8);
        assert!(e < 1e-6, "relative error {e}");
        // every tensor gets a gradient but wpe's rows past the last x token: the last y token
        // (row 2K - 1) reaches no prediction, rows 2K.. are unused (K = 3 < P = 4)
        for t in spec.tensors() {
            let gt = &grad[t.offset..t.offset + t.len()];
            let n = gt.iter().filter(|v| **v != 0.0).count();
            if t.name == "wpe" {
                assert_eq!(n, (2 * k - 1) * spec.embd, "wpe");
            } else {
                assert!(n > 0, "{} has no gradient", t.name);
            }
        }
    }

    #[test]
    fn gpt2_loss_grad_accumulates() {
        let spec = small();
        let params = random_params(&spec, 3);
        let (xs, ys) = prompt(&spec, 2, 4);
        let mut ws = Workspace::new();
        let mut g1 = vec![0.0; spec.n_params()];
        loss_grad(&spec, &params, &xs, &ys, 2, 0.5, &mut ws, &mut g1).unwrap();
        let mut g2 = g1.clone();
        loss_grad(&spec, &params, &xs, &ys, 2, 0.5, &mut ws, &mut g2).unwrap();
        for (a, b) in g1.iter().zip(&g2) {
            assert!((2.0 * a - b).abs() <= 1e-12 * a.abs().max(1.0));
        }
        // the workspace holds what the spec counts
        assert_eq!(ws.len() as u64, spec.workspace_values(2).unwrap());
    }

    #[test]
    fn gpt2_is_causal() {
        let spec = small();
        let k = 4;
        let params = random_params(&spec, 5);
        let (xs, ys) = prompt(&spec, k, 6);
        let mut ws = Workspace::new();
        let mut base = vec![0.0; k];
        forward(&spec, &params, &xs, &ys, k, &mut ws, &mut base).unwrap();
        let mut p = vec![0.0; k];
        for j in 0..k {
            // y_j (token 2j + 1) reaches predictions i > j only
            let mut y2 = ys.clone();
            y2[j] += 1.5;
            forward(&spec, &params, &xs, &y2, k, &mut ws, &mut p).unwrap();
            for i in 0..k {
                let same = p[i] == base[i];
                assert_eq!(same, i <= j, "y_{j} at prediction {i}");
            }
            // x_j (token 2j) reaches predictions i >= j only
            let mut x2 = xs.clone();
            x2[j * spec.d] += 1.5;
            forward(&spec, &params, &x2, &ys, k, &mut ws, &mut p).unwrap();
            for i in 0..k {
                let same = p[i] == base[i];
                assert_eq!(same, i < j, "x_{j} at prediction {i}");
            }
        }
    }

    /// A second, naive implementation of the model, written from the formulas of the family's
    /// doc (not from `ops`): nested vectors, one token at a time, two-pass variances.
    fn naive_predictions(spec: &Gpt2Spec, p: &[f64], xs: &[f64], ys: &[f64], k: usize) -> Vec<f64> {
        let (d, c, nl, nh) = (spec.d, spec.embd, spec.layers, spec.heads);
        let hd = c / nh;
        let ts = spec.tensors();
        let get = |name: &str| {
            let t = ts.iter().find(|t| t.name == name).unwrap();
            &p[t.offset..t.offset + t.len()]
        };
        let ln = |x: &[f64], w: &[f64], b: &[f64]| -> Vec<f64> {
            let m = x.iter().sum::<f64>() / x.len() as f64;
            let v = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / x.len() as f64;
            (0..x.len())
                .map(|i| (x[i] - m) / (v + 1e-5).sqrt() * w[i] + b[i])
                .collect()
        };
        // Conv1D: y[j] = b[j] + sum_i x[i] W[i][j], W [in, out]
        let conv = |x: &[f64], w: &[f64], b: &[f64]| -> Vec<f64> {
            let out = b.len();
            (0..out)
                .map(|j| b[j] + (0..x.len()).map(|i| x[i] * w[i * out + j]).sum::<f64>())
                .collect()
        };
        let gelu = |x: f64| {
            0.5 * x
                * (1.0 + ((2.0 / core::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
        };
        let n = 2 * k;
        let mut tokens = vec![vec![0.0; d]; n];
        for i in 0..k {
            tokens[2 * i] = xs[i * d..(i + 1) * d].to_vec();
            tokens[2 * i + 1][0] = ys[i];
        }
        let (wi, bi, wpe) = (get("read_in.weight"), get("read_in.bias"), get("wpe"));
        let mut h: Vec<Vec<f64>> = (0..n)
            .map(|t| {
                (0..c)
                    .map(|o| {
                        bi[o]
                            + (0..d).map(|i| wi[o * d + i] * tokens[t][i]).sum::<f64>()
                            + wpe[t * c + o]
                    })
                    .collect()
            })
            .collect();
        for l in 0..nl {
            let sl = |name: &str, per: usize| &get(name)[l * per..(l + 1) * per];
            let qkv: Vec<Vec<f64>> = h
                .iter()
                .map(|x| {
                    let y = ln(x, sl("ln_1.weight", c), sl("ln_1.bias", c));
                    conv(
                        &y,
                        sl("attn.c_attn.weight", 3 * c * c),
                        sl("attn.c_attn.bias", 3 * c),
                    )
                })
                .collect();
            let mut a = h.clone();
            for t in 0..n {
                let mut heads = vec![0.0; c];
                for hh in 0..nh {
                    let q = |u: usize, part: usize, i: usize| qkv[u][part * c + hh * hd + i];
                    let s: Vec<f64> = (0..=t)
                        .map(|u| {
                            (0..hd).map(|i| q(t, 0, i) * q(u, 1, i)).sum::<f64>()
                                / (hd as f64).sqrt()
                                / spec.tau
                        })
                        .collect();
                    let z: f64 = s.iter().map(|v| v.exp()).sum();
                    for u in 0..=t {
                        for i in 0..hd {
                            heads[hh * hd + i] += s[u].exp() / z * q(u, 2, i);
                        }
                    }
                }
                let o = conv(
                    &heads,
                    sl("attn.c_proj.weight", c * c),
                    sl("attn.c_proj.bias", c),
                );
                for i in 0..c {
                    a[t][i] += o[i];
                }
            }
            for t in 0..n {
                let y = ln(&a[t], sl("ln_2.weight", c), sl("ln_2.bias", c));
                let f: Vec<f64> = conv(
                    &y,
                    sl("mlp.c_fc.weight", 4 * c * c),
                    sl("mlp.c_fc.bias", 4 * c),
                )
                .into_iter()
                .map(gelu)
                .collect();
                let o = conv(
                    &f,
                    sl("mlp.c_proj.weight", 4 * c * c),
                    sl("mlp.c_proj.bias", c),
                );
                for i in 0..c {
                    h[t][i] = a[t][i] + o[i];
                }
            }
        }
        let (wo, bo) = (get("read_out.weight"), get("read_out.bias"));
        (0..k)
            .map(|i| {
                let y = ln(&h[2 * i], get("ln_f.weight"), get("ln_f.bias"));
                bo[0] + (0..c).map(|j| wo[j] * y[j]).sum::<f64>()
            })
            .collect()
    }

    #[test]
    fn gpt2_forward_matches_a_naive_implementation() {
        let spec = Gpt2Spec {
            d: 2,
            embd: 6,
            layers: 2,
            heads: 3,
            positions: 5,
            tau: 1.3,
        };
        let k = 4;
        let params = random_params(&spec, 7);
        let (xs, ys) = prompt(&spec, k, 8);
        let mut preds = vec![0.0; k];
        forward(
            &spec,
            &params,
            &xs,
            &ys,
            k,
            &mut Workspace::new(),
            &mut preds,
        )
        .unwrap();
        let want = naive_predictions(&spec, &params, &xs, &ys, k);
        for (a, b) in preds.iter().zip(&want) {
            assert!((a - b).abs() < 1e-12, "{preds:?} vs {want:?}");
        }
        // and in f32, to its precision
        let p32: Vec<f32> = params.iter().map(|v| *v as f32).collect();
        let x32: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
        let y32: Vec<f32> = ys.iter().map(|v| *v as f32).collect();
        let mut pr = vec![0.0f32; k];
        forward(&spec, &p32, &x32, &y32, k, &mut Workspace::new(), &mut pr).unwrap();
        for (a, b) in pr.iter().zip(&want) {
            assert!(
                (*a as f64 - b).abs() < 1e-4 * (1.0 + b.abs()),
                "{pr:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn gpt2_model_rejects_bad_shapes() {
        let spec = small();
        let params = random_params(&spec, 9);
        let (xs, ys) = prompt(&spec, 3, 10);
        let mut ws = Workspace::new();
        let mut preds = vec![0.0; 3];
        let mut grad = vec![0.0; spec.n_params()];
        // wrong parameter count
        assert!(matches!(
            forward(&spec, &params[1..], &xs, &ys, 3, &mut ws, &mut preds),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            loss_grad(&spec, &params, &xs, &ys, 3, 1.0, &mut ws, &mut grad[1..]),
            Err(Error::Shape(_))
        ));
        // K > P
        let (x5, y5) = prompt(&spec, 5, 10);
        let mut p5 = vec![0.0; 5];
        assert!(matches!(
            forward(&spec, &params, &x5, &y5, 5, &mut ws, &mut p5),
            Err(Error::Shape(_))
        ));
        // buffers that do not match K
        assert!(forward(&spec, &params, &xs[1..], &ys, 3, &mut ws, &mut preds).is_err());
        assert!(forward(&spec, &params, &xs, &ys, 3, &mut ws, &mut preds[1..]).is_err());
        assert!(forward(&spec, &params, &xs, &ys, 0, &mut ws, &mut preds[..0]).is_err());
        // embd not a multiple of heads
        let bad = Gpt2Spec {
            heads: 3,
            ..small()
        };
        assert!(matches!(
            forward(&bad, &params, &xs, &ys, 3, &mut ws, &mut preds),
            Err(Error::InvalidConfig(_))
        ));
    }
}
