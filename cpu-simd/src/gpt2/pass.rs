//! One chunk of B prompts through the model: the forward pass and the backward pass over the
//! chunk's N = B T rows at once (T = 2K tokens a prompt), every matrix of the model one product
//! over all N rows ([`super::gemm`]), the row operations of [`super::ops`] between them. The
//! order of operations is [`icl_core::families::gpt2::model`]'s:
//! ```text
//! h      = tok read_in.weight^T + (read_in.bias + wpe[t])               [N, C]
//! per block l:
//!   qkv  = ln_1(h) c_attn.weight + c_attn.bias                          [N, 3C]
//!   a    = (h + attn.c_proj.bias) + attn(qkv) attn.c_proj.weight        [N, C]
//!   fch  = ln_2(a) c_fc.weight + c_fc.bias                              [N, 4C]
//!   h    = (a + mlp.c_proj.bias) + gelu_new(fch) mlp.c_proj.weight      [N, C]
//! pred   = ln_f(h) read_out.weight^T + read_out.bias, at the x tokens   [B, K]
//! ```
//! (a bias, and a residual, are the product's starting value: one pass over the output fewer).
use super::gemm::{gemm, GemmScalar, Mat};
use super::ops::{self, RowScalar};
use icl_core::families::gpt2::kernels::prompt_of_batch;
use icl_core::families::gpt2::model::{layer, layer_mut, write_tokens, Gpt2Tensors};
use icl_core::families::gpt2::Gpt2Spec;
use icl_core::Batch;

/// The scalars of the GPT-2 engine.
pub trait Gpt2Scalar: RowScalar + GemmScalar {}
impl<T: RowScalar + GemmScalar> Gpt2Scalar for T {}

/// What one block keeps for the backward, over the chunk's N rows.
#[derive(Debug, Default)]
struct Block<T> {
    /// The block's input stream h `[N, C]`.
    h: Vec<T>,
    /// ln_1(h) `[N, C]`, its mean and 1/std `[N]`.
    ln1: Vec<T>,
    ln1_mean: Vec<T>,
    ln1_rstd: Vec<T>,
    /// q | k | v `[N, 3C]`.
    qkv: Vec<T>,
    /// Attention weights `[B, H, T, T]` (row t holds u <= t).
    att: Vec<T>,
    /// The heads' mix `[N, C]`.
    atty: Vec<T>,
    /// a = h + attention `[N, C]`.
    a: Vec<T>,
    /// ln_2(a) `[N, C]`, its mean and 1/std `[N]`.
    ln2: Vec<T>,
    ln2_mean: Vec<T>,
    ln2_rstd: Vec<T>,
    /// c_fc's output `[N, 4C]`, after GELU, and GELU's tanh.
    fch: Vec<T>,
    fch_gelu: Vec<T>,
    fch_th: Vec<T>,
}

/// `v` with `n` values (contents left as they are: every buffer is written before it is read).
#[inline(always)]
fn fit<T: Copy + Default>(v: &mut Vec<T>, n: usize) {
    v.resize(n, T::default());
}

/// The activations and scratch of one chunk; reused across chunks and calls.
#[derive(Debug, Default)]
pub struct ChunkWs<T> {
    /// The tokens `[N, d]`.
    tok: Vec<T>,
    blocks: Vec<Block<T>>,
    /// The last stream `[N, C]`, ln_f of it, its mean and 1/std `[N]`.
    hf: Vec<T>,
    lnf: Vec<T>,
    lnf_mean: Vec<T>,
    lnf_rstd: Vec<T>,
    /// The predictions, the targets and the predictions' gradient `[B, K]`.
    pub(crate) preds: Vec<T>,
    ys: Vec<T>,
    dpreds: Vec<T>,
    /// Gradients of the stream `[N, C]`, of a LayerNorm's output `[N, C]`, of the heads' mix
    /// `[N, C]`, of qkv `[N, 3C]`, of c_fc's output (before and after GELU, in place) `[N, 4C]`.
    dres: Vec<T>,
    dln: Vec<T>,
    datty: Vec<T>,
    dqkv: Vec<T>,
    dfch: Vec<T>,
    /// The gradient of one head's attention weights `[T, T]`; a LayerNorm row's scratch `[C]`.
    dp: Vec<T>,
    lnscratch: Vec<T>,
    /// One prompt: `[K, d]` and `[K]`.
    xs: Vec<T>,
    y1: Vec<T>,
}

impl<T: Gpt2Scalar> ChunkWs<T> {
    /// Size every buffer for `nb` prompts of `k` pairs (`grad`: the backward's too).
    fn resize(&mut self, spec: &Gpt2Spec, nb: usize, k: usize, grad: bool) {
        let (d, c, nh, t) = (spec.d, spec.embd, spec.heads, 2 * k);
        let n = nb * t;
        self.blocks.resize_with(spec.layers, Block::default);
        for b in &mut self.blocks {
            for (v, len) in [
                (&mut b.h, n * c),
                (&mut b.ln1, n * c),
                (&mut b.ln1_mean, n),
                (&mut b.ln1_rstd, n),
                (&mut b.qkv, 3 * n * c),
                (&mut b.att, nb * nh * t * t),
                (&mut b.atty, n * c),
                (&mut b.a, n * c),
                (&mut b.ln2, n * c),
                (&mut b.ln2_mean, n),
                (&mut b.ln2_rstd, n),
                (&mut b.fch, 4 * n * c),
                (&mut b.fch_gelu, 4 * n * c),
                (&mut b.fch_th, 4 * n * c),
            ] {
                fit(v, len);
            }
        }
        let g = |x: usize| if grad { x } else { 0 };
        for (v, len) in [
            (&mut self.tok, n * d),
            (&mut self.hf, n * c),
            (&mut self.lnf, n * c),
            (&mut self.lnf_mean, n),
            (&mut self.lnf_rstd, n),
            (&mut self.preds, nb * k),
            (&mut self.ys, nb * k),
            (&mut self.dpreds, g(nb * k)),
            (&mut self.dres, g(n * c)),
            (&mut self.dln, g(n * c)),
            (&mut self.datty, g(n * c)),
            (&mut self.dqkv, g(3 * n * c)),
            (&mut self.dfch, g(4 * n * c)),
            (&mut self.dp, g(t * t)),
            (&mut self.lnscratch, c),
            (&mut self.xs, k * d),
            (&mut self.y1, k),
        ] {
            fit(v, len);
        }
    }

    /// The tokens and targets of sequences `b0..b0 + nb` of `batch`.
    #[inline(always)]
    pub fn load_batch(&mut self, spec: &Gpt2Spec, batch: &Batch<T>, b0: usize, nb: usize) {
        let k = batch.len + 1;
        self.resize(spec, nb, k, true);
        let (d, t) = (spec.d, 2 * k);
        for j in 0..nb {
            prompt_of_batch(batch, b0 + j, &mut self.xs, &mut self.y1);
            write_tokens(
                &mut self.tok[j * t * d..][..t * d],
                &self.xs,
                &self.y1,
                k,
                d,
            );
            self.ys[j * k..][..k].copy_from_slice(&self.y1);
        }
    }

    /// The tokens of `nb` prompts of `k` pairs (`xs: [nb, k, d]`, `ys: [nb, k]`).
    #[inline(always)]
    pub fn load_prompts(&mut self, spec: &Gpt2Spec, xs: &[T], ys: &[T], nb: usize, k: usize) {
        self.resize(spec, nb, k, false);
        let (d, t) = (spec.d, 2 * k);
        for j in 0..nb {
            write_tokens(
                &mut self.tok[j * t * d..][..t * d],
                &xs[j * k * d..][..k * d],
                &ys[j * k..][..k],
                k,
                d,
            );
        }
    }

    /// The forward pass of the loaded `nb` prompts of `k` pairs; the predictions end in `preds`.
    #[inline(always)]
    pub fn forward(&mut self, spec: &Gpt2Spec, p: &Gpt2Tensors<&[T]>, nb: usize, k: usize) {
        let (d, c, nh, t) = (spec.d, spec.embd, spec.heads, 2 * k);
        let n = nb * t;
        let ChunkWs {
            tok,
            blocks,
            hf,
            lnf,
            lnf_mean,
            lnf_rstd,
            preds,
            ..
        } = self;
        // h = tok read_in.weight^T + (read_in.bias + wpe[t])
        let h0: &mut [T] = match blocks.first_mut() {
            Some(b) => &mut b.h,
            None => hf,
        };
        for j in 0..nb {
            ops::add_rows(&mut h0[j * t * c..][..t * c], p.wpe, p.read_in_b, t);
        }
        gemm(
            Mat::rows(tok, n, d),
            Mat::rows(p.read_in_w, c, d).t(),
            h0,
            true,
        );
        for l in 0..spec.layers {
            let (cur, rest) = blocks.split_at_mut(l + 1);
            let b = &mut cur[l];
            let next: &mut [T] = match rest.first_mut() {
                Some(x) => &mut x.h,
                None => hf,
            };
            // qkv = ln_1(h) c_attn.weight + c_attn.bias
            ops::layernorm_forward(
                &mut b.ln1,
                &mut b.ln1_mean,
                &mut b.ln1_rstd,
                &b.h,
                layer(p.ln_1_w, l, c),
                layer(p.ln_1_b, l, c),
                n,
                c,
            );
            ops::broadcast_rows(&mut b.qkv, layer(p.c_attn_b, l, 3 * c), n);
            gemm(
                Mat::rows(&b.ln1, n, c),
                Mat::rows(layer(p.c_attn_w, l, 3 * c * c), c, 3 * c),
                &mut b.qkv,
                true,
            );
            // atty = attn(qkv), one prompt at a time
            for j in 0..nb {
                ops::attention_forward(
                    &mut b.atty[j * t * c..][..t * c],
                    &mut b.att[j * nh * t * t..][..nh * t * t],
                    &b.qkv[j * t * 3 * c..][..t * 3 * c],
                    t,
                    c,
                    nh,
                    spec.tau,
                );
            }
            // a = (h + attn.c_proj.bias) + atty attn.c_proj.weight
            ops::add_rows(&mut b.a, &b.h, layer(p.attn_proj_b, l, c), n);
            gemm(
                Mat::rows(&b.atty, n, c),
                Mat::rows(layer(p.attn_proj_w, l, c * c), c, c),
                &mut b.a,
                true,
            );
            // fch = ln_2(a) c_fc.weight + c_fc.bias
            ops::layernorm_forward(
                &mut b.ln2,
                &mut b.ln2_mean,
                &mut b.ln2_rstd,
                &b.a,
                layer(p.ln_2_w, l, c),
                layer(p.ln_2_b, l, c),
                n,
                c,
            );
            ops::broadcast_rows(&mut b.fch, layer(p.c_fc_b, l, 4 * c), n);
            gemm(
                Mat::rows(&b.ln2, n, c),
                Mat::rows(layer(p.c_fc_w, l, 4 * c * c), c, 4 * c),
                &mut b.fch,
                true,
            );
            ops::gelu_forward(&mut b.fch_gelu, &mut b.fch_th, &b.fch);
            // h' = (a + mlp.c_proj.bias) + gelu_new(fch) mlp.c_proj.weight
            ops::add_rows(next, &b.a, layer(p.mlp_proj_b, l, c), n);
            gemm(
                Mat::rows(&b.fch_gelu, n, 4 * c),
                Mat::rows(layer(p.mlp_proj_w, l, 4 * c * c), 4 * c, c),
                next,
                true,
            );
        }
        // pred_i = ln_f(h) read_out.weight^T + read_out.bias at token 2i
        ops::layernorm_forward(lnf, lnf_mean, lnf_rstd, hf, p.ln_f_w, p.ln_f_b, n, c);
        for j in 0..nb {
            for i in 0..k {
                let x = &lnf[(j * t + 2 * i) * c..][..c];
                preds[j * k + i] = p.read_out_b[0] + ops::dot(p.read_out_w, x);
            }
        }
    }

    /// The squared error of the loaded prompts, `w sum_i (pred_i - y_i)^2` a prompt, summed in
    /// order of the prompts, and its gradient with respect to the predictions.
    #[inline(always)]
    pub fn loss(&mut self, nb: usize, k: usize, w: T) -> T {
        let mut loss = T::zero();
        for j in 0..nb {
            let mut l = T::zero();
            for i in j * k..(j + 1) * k {
                let e = self.preds[i] - self.ys[i];
                l += e * e;
                self.dpreds[i] = (w + w) * e;
            }
            loss += w * l;
        }
        loss
    }

    /// The backward pass of [`ChunkWs::forward`] from the predictions' gradient, accumulating
    /// into `g`.
    #[inline(always)]
    pub fn backward(
        &mut self,
        spec: &Gpt2Spec,
        p: &Gpt2Tensors<&[T]>,
        g: &mut Gpt2Tensors<&mut [T]>,
        nb: usize,
        k: usize,
    ) {
        let (d, c, nh, t) = (spec.d, spec.embd, spec.heads, 2 * k);
        let n = nb * t;
        let ChunkWs {
            tok,
            blocks,
            hf,
            lnf,
            lnf_mean,
            lnf_rstd,
            dpreds,
            dres,
            dln,
            datty,
            dqkv,
            dfch,
            dp,
            lnscratch,
            ..
        } = self;
        // pred = ln_f(h) read_out.weight^T + read_out.bias at the x tokens: the y tokens' rows
        // get no gradient
        dln.iter_mut().for_each(|v| *v = T::zero());
        for j in 0..nb {
            for i in 0..k {
                let r = (j * t + 2 * i) * c;
                let dp = dpreds[j * k + i];
                g.read_out_b[0] += dp;
                ops::axpy(g.read_out_w, dp, &lnf[r..][..c]);
                ops::axpy(&mut dln[r..][..c], dp, p.read_out_w);
            }
        }
        dres.iter_mut().for_each(|v| *v = T::zero());
        ops::layernorm_backward(
            dres, lnscratch, g.ln_f_w, g.ln_f_b, dln, hf, p.ln_f_w, lnf_mean, lnf_rstd, n, c,
        );
        // dres holds the gradient of block l's output stream
        for l in (0..spec.layers).rev() {
            let b = &blocks[l];
            // h' = (a + bias) + fch_gelu W: dbias, dW += fch_gelu^T dh', dfch_gelu = dh' W^T
            // (and da = dh', already in dres)
            ops::colsum(layer_mut(g.mlp_proj_b, l, c), dres, n);
            gemm(
                Mat::rows(&b.fch_gelu, n, 4 * c).t(),
                Mat::rows(dres, n, c),
                layer_mut(g.mlp_proj_w, l, 4 * c * c),
                true,
            );
            gemm(
                Mat::rows(dres, n, c),
                Mat::rows(layer(p.mlp_proj_w, l, 4 * c * c), 4 * c, c).t(),
                dfch,
                false,
            );
            // fch_gelu = gelu_new(fch)
            ops::gelu_backward(dfch, &b.fch, &b.fch_th);
            // fch = ln2 W + bias
            ops::colsum(layer_mut(g.c_fc_b, l, 4 * c), dfch, n);
            gemm(
                Mat::rows(&b.ln2, n, c).t(),
                Mat::rows(dfch, n, 4 * c),
                layer_mut(g.c_fc_w, l, 4 * c * c),
                true,
            );
            gemm(
                Mat::rows(dfch, n, 4 * c),
                Mat::rows(layer(p.c_fc_w, l, 4 * c * c), c, 4 * c).t(),
                dln,
                false,
            );
            // ln2 = ln_2(a): da += ..
            ops::layernorm_backward(
                dres,
                lnscratch,
                layer_mut(g.ln_2_w, l, c),
                layer_mut(g.ln_2_b, l, c),
                dln,
                &b.a,
                layer(p.ln_2_w, l, c),
                &b.ln2_mean,
                &b.ln2_rstd,
                n,
                c,
            );
            // a = (h + bias) + atty W: dbias, dW += atty^T da, datty = da W^T (dh = da)
            ops::colsum(layer_mut(g.attn_proj_b, l, c), dres, n);
            gemm(
                Mat::rows(&b.atty, n, c).t(),
                Mat::rows(dres, n, c),
                layer_mut(g.attn_proj_w, l, c * c),
                true,
            );
            gemm(
                Mat::rows(dres, n, c),
                Mat::rows(layer(p.attn_proj_w, l, c * c), c, c).t(),
                datty,
                false,
            );
            // atty = attn(qkv)
            for j in 0..nb {
                ops::attention_backward(
                    &mut dqkv[j * t * 3 * c..][..t * 3 * c],
                    dp,
                    &datty[j * t * c..][..t * c],
                    &b.qkv[j * t * 3 * c..][..t * 3 * c],
                    &b.att[j * nh * t * t..][..nh * t * t],
                    t,
                    c,
                    nh,
                    spec.tau,
                );
            }
            // qkv = ln1 W + bias
            ops::colsum(layer_mut(g.c_attn_b, l, 3 * c), dqkv, n);
            gemm(
                Mat::rows(&b.ln1, n, c).t(),
                Mat::rows(dqkv, n, 3 * c),
                layer_mut(g.c_attn_w, l, 3 * c * c),
                true,
            );
            gemm(
                Mat::rows(dqkv, n, 3 * c),
                Mat::rows(layer(p.c_attn_w, l, 3 * c * c), c, 3 * c).t(),
                dln,
                false,
            );
            // ln1 = ln_1(h): dh += ..
            ops::layernorm_backward(
                dres,
                lnscratch,
                layer_mut(g.ln_1_w, l, c),
                layer_mut(g.ln_1_b, l, c),
                dln,
                &b.h,
                layer(p.ln_1_w, l, c),
                &b.ln1_mean,
                &b.ln1_rstd,
                n,
                c,
            );
        }
        // h = tok read_in.weight^T + (read_in.bias + wpe[t]) (the tokens are data: no gradient)
        for j in 0..nb {
            ops::add(&mut g.wpe[..t * c], &dres[j * t * c..][..t * c]);
        }
        ops::colsum(g.read_in_b, dres, n);
        gemm(
            Mat::rows(dres, n, c).t(),
            Mat::rows(tok, n, d),
            g.read_in_w,
            true,
        );
    }
}
