//! Parameter initialisation (spec §2.1): PyTorch's `nn.Linear` default, the reference code's
//! small-identity variants, and scaled Gaussian. All draws come from stream (seed, Init, 0, 0) in
//! tensor order, row-major.
use crate::config::{Config, InitKind, Param};
use crate::model::ModelSpec;
use crate::rng::{self, Domain};
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Initial parameters for `spec` as `cfg.model.init` says.
pub fn init_params<T: Scalar>(spec: &ModelSpec, cfg: &Config) -> Result<Vec<T>> {
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
