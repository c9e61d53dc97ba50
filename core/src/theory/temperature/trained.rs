//! The linearised layer of a model icl trained (issue 20, `icl theory ... --run DIR`): the
//! parameters M11, m21, v21, v22 of spec §2.4 read off a one-layer, one-head softmax run, so the
//! closed forms (paper and exact) and the Monte Carlo of this module evaluate that model's
//! linearisation. The run layer reads the folder; this file only maps a model already in memory.
//!
//! A run's head predicts `yhat = sum_i w_i OV z_i` with `w_i = f(s_i) / sum_j f(s_j)`,
//! `s_i = z_i^T KQ z_q` (KQ the effective circuit, the score scale included), the keys
//! `z_i = (x_i, y_i)` the context tokens (and the query `z_q = (x_q, 0)` itself when
//! `model.self_attend`). `icl eval --tau` divides every logit by tau (`KQ / tau`,
//! [`crate::tempered`]). Every activation of the softmax family has `f(0) = 1`, `f'(0) = C_f`
//! ([`crate::model::ModelSpec::c_f`]: 1 for exp and tanh), so the expansion around zero logits is
//! `w_i = 1/n + C_f (s_i - mean(s)) / (n tau)` over the n keys: the paper's linearised layer
//! (eq. 5, spec §2.2–2.5) at the same tau with `M = C_f KQ` and V's last row `OV`:
//! `M11 = C_f KQ[0..d][0..d]`, `m21 = C_f KQ[d][0..d]` (the bottom-left row), `v21 = OV[0..d]`,
//! `v22 = OV[d]`, and the keys the run's ([`Params::self_attend`]).
//!
//! The softmax and its linearisation agree when the logits are small (`|s| / tau << 1`); a
//! trained run's logits are O(1) at tau = 1, so the closed forms describe the linearised model,
//! not the run itself (docs/papers/temperature.md, "Temperature of a trained run", gives the
//! measured gap).
use super::{Gaussian, Params};
use crate::config::{AttentionKind, Config, TaskKind};
use crate::model::{Model, Net};
use crate::{Error, Result};
use alloc::format;
use alloc::vec::Vec;

/// The linearised layer of a one-layer, one-head softmax-family attention model with one output
/// (module doc). Other models are [`Error::Unsupported`], naming what cannot be mapped.
pub fn linearise(model: &Model<f64>) -> Result<Params> {
    let no = |what: &str| {
        Err(Error::Unsupported(format!(
            "{what}: the temperature closed forms describe one linearised softmax head (a one-layer, one-head softmax run with one output)"
        )))
    };
    let s = match &model.spec.net {
        Net::Attention(s) => s,
        Net::Stack(st) => return no(&format!("a {}-layer transformer", st.layers)),
        Net::Iv(_) => return no("the IV two-stage model"),
        Net::Gpt2(_) => return no("a GPT-2 model"),
    };
    if s.attention == AttentionKind::Linear {
        return no("linear attention (its weights are not a normalised softmax)");
    }
    if s.heads != 1 {
        return no(&format!("{} heads", s.heads));
    }
    if s.n_out != 1 {
        return no(&format!("{} outputs", s.n_out));
    }
    let Some(cf) = s.c_f() else {
        return no("an activation without a first-order coefficient");
    };
    let c = model.circuits()?;
    let (d, e) = (s.d, s.e());
    let (kq, ov) = (c.kq_head(0), c.ov_head(0));
    let m11: Vec<f64> = (0..d * d).map(|k| cf * kq[(k / d) * e + k % d]).collect();
    let m21: Vec<f64> = (0..d).map(|j| cf * kq[d * e + j]).collect();
    let p = Params {
        d,
        m11,
        m21,
        v21: ov[..d].to_vec(),
        v22: ov[d],
        self_attend: s.self_attend,
    };
    if p.m11
        .iter()
        .chain(&p.m21)
        .chain(&p.v21)
        .any(|v| !v.is_finite())
        || !p.v22.is_finite()
    {
        return Err(Error::NonFinite("the run's circuits".into()));
    }
    Ok(p)
}

/// The Gaussian a run was trained on, in this module's terms: `x ~ N(0, Sigma)` (I for
/// `task.kind = isotropic`, the KMS or given covariance for `anisotropic`), the task
/// `w ~ N(0, I/d)`, noise variance `task.sigma2`. Other task kinds are [`Error::Unsupported`].
pub fn training_distribution(cfg: &Config) -> Result<Gaussian> {
    let t = &cfg.task;
    if !matches!(t.kind, TaskKind::Isotropic | TaskKind::Anisotropic) {
        return Err(Error::Unsupported(format!(
            "task.kind = {}: the run's training distribution is not the paper's Gaussian (isotropic or anisotropic tasks are); give the test distribution with the test-* flags",
            t.kind.as_str()
        )));
    }
    let d = t.d;
    let mut g = Gaussian::isotropic(d, 1.0, 1.0 / d as f64, t.sigma2);
    g.sigma_x = crate::data::Task::new(cfg)?.covariance();
    Ok(g)
}

/// Norms describing a mapped layer: `(tr(M11)/d, |M11 - tr(M11)/d I|_F / |M11|_F, |m21|, |v21|)`.
pub fn summary(p: &Params) -> (f64, f64, f64, f64) {
    let d = p.d;
    let mean = (0..d).map(|i| p.m11[i * d + i]).sum::<f64>() / d as f64;
    let norm = |v: &mut dyn Iterator<Item = f64>| libm::sqrt(v.map(|x| x * x).sum::<f64>());
    let off = norm(&mut (0..d * d).map(|k| p.m11[k] - if k / d == k % d { mean } else { 0.0 }));
    let all = norm(&mut p.m11.iter().copied());
    (
        mean,
        if all > 0.0 { off / all } else { 0.0 },
        norm(&mut p.m21.iter().copied()),
        norm(&mut p.v21.iter().copied()),
    )
}
