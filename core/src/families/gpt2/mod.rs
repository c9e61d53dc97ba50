//! The GPT-2 in-context learner of Garg et al. (2022), "What Can Transformers Learn In-Context?
//! A Case Study of Simple Function Classes" (dtsip/in-context-learning, `src/models.py`,
//! `TransformerModel`): transformers' `GPT2Model` between a linear read-in and a linear read-out,
//! written as llm.c writes GPT-2, forward/backward pairs on one flat parameter buffer, so that a
//! checkpoint maps onto the PyTorch model's state_dict tensor for tensor.
//!
//! **The prompt.** K = L + 1 pairs (x_i in R^d, y_i) become 2K tokens of width d:
//! `x_0, (y_0, 0, .., 0), x_1, (y_1, 0, .., 0), ..` (Garg et al.'s `_combine`). The model reads
//! out at every x token (token 2i): prediction i sees pairs 0..i-1 and x_i, and the loss is the
//! mean of `(pred_i - y_i)^2` over the sequences and the K positions.
//!
//! **The model** (C = embd columns, NL layers, H heads of hd = C / H, P prompt positions):
//! ```text
//! h   = read_in(tok) + wpe[t]                    nn.Linear(d -> C); wpe [2P, C], so 2K <= 2P
//! a   = h + attn(ln_1(h))                        pre-LN block, NL times
//! h   = a + mlp(ln_2(a))
//! out = read_out(ln_f(h))                        nn.Linear(C -> 1)
//! attn(x) = c_proj(concat_h softmax_{u <= t}(q_t^h . k_u^h / (sqrt(hd) tau)) v_u^h),
//!           q | k | v = c_attn(x)                causal: a token attends to itself and earlier ones
//! mlp(x)  = c_proj(gelu_new(c_fc(x)))            gelu_new(x) = x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2
//! LayerNorm: (x - mean) / sqrt(var + 1e-5) w + b (biased variance over C)
//! ```
//! tau = 1 is GPT-2; another tau divides every logit of every layer and head.
//!
//! **The parameters**, in the flat buffer's order (NL = layers; `[NL, ..]` tensors hold layer l
//! at its l-th slice, equal to PyTorch's `_backbone.h.{l}.…`; Conv1D weights are `[in, out]`,
//! nn.Linear weights `[out, in]`):
//!
//! | # | name | shape | PyTorch |
//! |---|---|---|---|
//! | 1 | `read_in.weight` | `[C, d]` | `_read_in.weight` |
//! | 2 | `read_in.bias` | `[C]` | `_read_in.bias` |
//! | 3 | `wpe` | `[2P, C]` | `_backbone.wpe.weight` |
//! | 4 | `ln_1.weight` | `[NL, C]` | `_backbone.h.{l}.ln_1.weight` |
//! | 5 | `ln_1.bias` | `[NL, C]` | `_backbone.h.{l}.ln_1.bias` |
//! | 6 | `attn.c_attn.weight` | `[NL, C, 3C]` | `_backbone.h.{l}.attn.c_attn.weight` |
//! | 7 | `attn.c_attn.bias` | `[NL, 3C]` | `_backbone.h.{l}.attn.c_attn.bias` |
//! | 8 | `attn.c_proj.weight` | `[NL, C, C]` | `_backbone.h.{l}.attn.c_proj.weight` |
//! | 9 | `attn.c_proj.bias` | `[NL, C]` | `_backbone.h.{l}.attn.c_proj.bias` |
//! | 10 | `ln_2.weight` | `[NL, C]` | `_backbone.h.{l}.ln_2.weight` |
//! | 11 | `ln_2.bias` | `[NL, C]` | `_backbone.h.{l}.ln_2.bias` |
//! | 12 | `mlp.c_fc.weight` | `[NL, C, 4C]` | `_backbone.h.{l}.mlp.c_fc.weight` |
//! | 13 | `mlp.c_fc.bias` | `[NL, 4C]` | `_backbone.h.{l}.mlp.c_fc.bias` |
//! | 14 | `mlp.c_proj.weight` | `[NL, 4C, C]` | `_backbone.h.{l}.mlp.c_proj.weight` |
//! | 15 | `mlp.c_proj.bias` | `[NL, C]` | `_backbone.h.{l}.mlp.c_proj.bias` |
//! | 16 | `ln_f.weight` | `[C]` | `_backbone.ln_f.weight` |
//! | 17 | `ln_f.bias` | `[C]` | `_backbone.ln_f.bias` |
//! | 18 | `read_out.weight` | `[1, C]` | `_read_out.weight` |
//! | 19 | `read_out.bias` | `[1]` | `_read_out.bias` |
//!
//! (The PyTorch model also holds `_backbone.wte.weight`, the token embedding it never uses since
//! it is fed `inputs_embeds`; it has no place here.)
//!
//! * [`spec`]: the shape, the layout, the cost (`step_flops`, `memory_bytes`);
//! * [`ops`]: every operation as a forward/backward pair (nn.Linear, Conv1D, LayerNorm,
//!   gelu_new, causal attention with tau, residual, positions, the x-token read-out, MSE);
//! * [`model`]: one prompt's forward pass and loss gradient over the flat parameters;
//! * [`init`]: transformers' `_init_weights` and PyTorch's nn.Linear default;
//! * [`kernels`]: the operations an engine implements for this family, behind a checking runner,
//!   and the scalar reference;
//! * [`objective`]: fresh data every step with Garg et al.'s curriculum;
//! * [`eval`]: the risk at every prompt position of the model and the classical estimators;
//! * [`analysis`]: every layer's and head's attention on one prompt.
pub mod analysis;
pub mod eval;
pub mod init;
pub mod kernels;
pub mod model;
pub mod objective;
pub mod ops;
pub mod spec;

pub use init::init_params;
pub use kernels::{Gpt2Kernels, Gpt2Reference, Gpt2Runner};
pub use model::{Gpt2Tensors, Workspace};
pub use spec::Gpt2Spec;
