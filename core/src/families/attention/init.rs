//! Initialisation of one-layer attention: PyTorch's `nn.Linear` default, the reference code's
//! small-identity variants, scaled Gaussian and Zhang et al.'s. All draws come from stream
//! (seed, Init, 0, 0) in tensor order, row-major.
use super::spec::AttentionSpec;
use crate::config::{Config, InitKind, Param};
use crate::rng::{self, Domain};
use crate::{Error, Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Initial parameters for `spec` as `cfg.model.init` says.
pub fn init_params<T: Scalar>(spec: &AttentionSpec, cfg: &Config) -> Result<Vec<T>> {
    let mut r = rng::stream(cfg.train.seed, Domain::Init, 0, 0);
    let (h_n, e, no, d) = (spec.heads, spec.e(), spec.n_out, spec.d);
    let tensors = spec.tensors();
    let mut p = vec![0.0f64; spec.n_params()];
    // fan-in bound of each tensor under PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    let bound = |name: &str| -> f64 {
        match name {
            "o_proj.weight" | "ov" => 1.0 / libm::sqrt((h_n * e) as f64),
            _ => 1.0 / libm::sqrt(e as f64),
        }
    };
    let kind = cfg.model.init;
    match kind {
        InitKind::Torch | InitKind::SmallIdQk => {
            for t in &tensors {
                let b = bound(t.name);
                for x in &mut p[t.offset..t.offset + t.len()] {
                    *x = b * (2.0 * rng::uniform(&mut r) - 1.0);
                }
            }
        }
        InitKind::Gaussian => {
            let s = cfg.model.init_scale.unwrap_or(1e-3);
            rng::fill_normal(&mut r, &mut p);
            p.iter_mut().for_each(|x| *x *= s);
        }
        InitKind::SmallId | InitKind::OppoSmallId => {}
        InitKind::ZhangPaper | InitKind::ZhangCode => {
            zhang_init(
                spec,
                kind,
                cfg.model.init_scale.unwrap_or(1e-3),
                &mut r,
                &mut p,
            )?;
        }
    }
    if matches!(
        kind,
        InitKind::SmallId | InitKind::OppoSmallId | InitKind::SmallIdQk
    ) {
        let s = cfg
            .model
            .init_scale
            .unwrap_or(if kind == InitKind::SmallIdQk {
                1e-4
            } else {
                1e-6
            });
        let sign = |h: usize| {
            if kind == InitKind::OppoSmallId && h % 2 == 1 {
                -1.0
            } else {
                1.0
            }
        };
        match spec.param {
            Param::Full => {
                let mats: &[usize] = if kind == InitKind::SmallIdQk {
                    &[0, 1]
                } else {
                    &[0, 1, 2]
                };
                for &m in mats {
                    for h in 0..h_n {
                        let base = m * h_n * e * e + h * e * e;
                        p[base..base + e * e].iter_mut().for_each(|x| *x = 0.0);
                        for i in 0..e {
                            p[base + i * e + i] = if m == 0 { s * sign(h) } else { s };
                        }
                    }
                }
                if kind != InitKind::SmallIdQk {
                    // O_h[o][d + o] = s for every head (so OV_22 starts at s^2)
                    let o = 3 * h_n * e * e;
                    for oo in 0..no {
                        for h in 0..h_n {
                            p[o + oo * h_n * e + h * e + d + oo] = s;
                        }
                    }
                }
            }
            Param::Merged => {
                for h in 0..h_n {
                    let base = h * e * e;
                    p[base..base + e * e].iter_mut().for_each(|x| *x = 0.0);
                    for i in 0..e {
                        p[base + i * e + i] = s * sign(h);
                    }
                    if kind != InitKind::SmallIdQk {
                        for oo in 0..no {
                            p[h_n * e * e + h * no * e + oo * e + d + oo] = s;
                        }
                    }
                }
            }
            Param::Separate | Param::MergedReduced | Param::SeparateReduced => {
                return Err(Error::Unsupported(
                    "identity-like inits need model.param = full | merged | reduced; use gaussian, zhang_paper or zhang_code"
                        .into(),
                ))
            }
            Param::Reduced => {
                for h in 0..h_n {
                    p[h] = s * sign(h);
                    if kind != InitKind::SmallIdQk {
                        for oo in 0..no {
                            p[h_n + h * no + oo] = s * sign(h);
                        }
                    }
                }
            }
        }
    }
    Ok(p.into_iter().map(T::of).collect())
}

/// Zhang et al. (2025) initialisations (App. C.2), with `w` = init scale. Draws N(0, 1) for every
/// parameter in tensor order, scales the relevant blocks and sets the zero blocks (the key's y
/// column kappa / u, the value's x columns, the query's y column, cross-output value entries) to 0.
///
/// * `zhang_paper` (App. C.2): v ~ N(0, w^2/H), U ~ N(0, w^2/(H d^2)), k, q ~ N(0, w^2/(H R d)).
/// * `zhang_code` (reference code): v, U ~ N(0, w^2), k, q ~ N(0, w^2/(R (d+1))).
fn zhang_init(
    spec: &AttentionSpec,
    kind: InitKind,
    w: f64,
    r: &mut rng::Rng,
    p: &mut [f64],
) -> Result<()> {
    let (h_n, e, no, d, rk) = (spec.heads, spec.e(), spec.n_out, spec.d, spec.rank);
    let (hf, df, rf) = (h_n as f64, d as f64, rk as f64);
    let paper = kind == InitKind::ZhangPaper;
    let sv = if paper { w / libm::sqrt(hf) } else { w };
    let su = if paper { w / (libm::sqrt(hf) * df) } else { w };
    let skq = if paper {
        w / libm::sqrt(hf * rf * df)
    } else {
        w / libm::sqrt(rf * (df + 1.0))
    };
    rng::fill_normal(r, p);
    for t in spec.tensors() {
        let x = &mut p[t.offset..t.offset + t.len()];
        match (spec.param, t.name) {
            (Param::Merged, "kq") => {
                // KQ_h[a][b] = U_h[a][b] for a, b < d; zero elsewhere
                for (i, v) in x.iter_mut().enumerate() {
                    let (a, b) = ((i / e) % e, i % e);
                    *v = if a < d && b < d { *v * su } else { 0.0 };
                }
            }
            (Param::Merged | Param::Separate, "ov") => {
                // OV_h[o][d + o] = v_h; zero elsewhere
                for (i, v) in x.iter_mut().enumerate() {
                    let (o, c) = ((i / e) % no, i % e);
                    *v = if c == d + o { *v * sv } else { 0.0 };
                }
            }
            (Param::Separate, "k" | "q") => {
                // k_{h,r} = [k; kappa = 0], q_{h,r} = [q; * = 0]
                for (i, v) in x.iter_mut().enumerate() {
                    *v = if i % e < d { *v * skq } else { 0.0 };
                }
            }
            (Param::MergedReduced, "u") => x.iter_mut().for_each(|v| *v *= su),
            (Param::SeparateReduced, "k" | "q") => x.iter_mut().for_each(|v| *v *= skq),
            (Param::MergedReduced | Param::SeparateReduced, "v") => {
                x.iter_mut().for_each(|v| *v *= sv)
            }
            _ => {
                return Err(Error::Unsupported(
                    "zhang_paper / zhang_code inits need model.param = merged | separate | merged_reduced | separate_reduced"
                        .into(),
                ))
            }
        }
    }
    Ok(())
}
