//! Initialisation of transformer blocks: every K, Q, V, O is a D x D `nn.Linear` (fan-in D,
//! PyTorch's default U(-1/sqrt(D), 1/sqrt(D))), or N(0, init_scale^2). Draws come from stream
//! (seed, Init, 0, 0) in tensor order, row-major.
use crate::config::{Config, InitKind};
use crate::rng::{self, Domain};
use crate::tensor::TensorInfo;
use crate::{Error, Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Initial parameters of the blocks whose tensors are `tensors` (one after another in the flat
/// buffer), as `cfg.model.init` says.
pub fn init_params<T: Scalar>(tensors: &[TensorInfo], cfg: &Config) -> Result<Vec<T>> {
    let mut r = rng::stream(cfg.train.seed, Domain::Init, 0, 0);
    let mut p = vec![0.0f64; tensors.iter().map(|t| t.len()).sum()];
    let kind = cfg.model.init;
    match kind {
        InitKind::Torch => {
            for t in tensors {
                let b = 1.0 / libm::sqrt(*t.shape.last().unwrap_or(&1) as f64);
                for x in &mut p[t.offset..t.offset + t.len()] {
                    *x = b * (2.0 * rng::uniform(&mut r) - 1.0);
                }
            }
        }
        InitKind::Gaussian => {
            let s = cfg.model.init_scale.unwrap_or(0.05);
            rng::fill_normal(&mut r, &mut p);
            p.iter_mut().for_each(|x| *x *= s);
        }
        other => {
            return Err(Error::Unsupported(alloc::format!(
                "model.init = {}: transformers start from torch or gaussian",
                other.as_str()
            )))
        }
    }
    Ok(p.iter().map(|&x| T::of(x)).collect())
}
