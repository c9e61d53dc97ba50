//! Predictions on prompts given by the caller (`icl predict`, C's `icl_model_predict_prompts`,
//! Python's `Run.predict_prompts`): `xs` [n, k, d] and `ys` [n, k] in; out, for GPT-2 models the
//! prediction at every x position ([n, k]: position i reads pairs 0..i-1 and x_i), for the
//! other families the prediction at the last x as their query ([n, n_out]: pairs 0..k-2 are the
//! context, `ys[.., k-1]` is not read).
use crate::any::AnyModel;
use crate::checkpoint::{encode, Raw};
use crate::dispatch;
use crate::engines::RunScalar;
use crate::error::{Result, RunError};
use crate::folder::{atomic_write, read_safetensors};
use icl_core::data::Batch;
use icl_core::families::gpt2::Gpt2Runner;
use icl_core::families::stack::layers::{circuits_forward, Pass, StackCircuits};
use icl_core::families::stack::StackRunner;
use icl_core::model::{Model, Net};
use icl_core::Runner;
use std::collections::BTreeMap;
use std::path::Path;

/// Predictions and their shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions {
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
}

/// The predictions of `model` on `n` prompts of `k` pairs (`xs` [n, k, d], `ys` [n, k]) on
/// `engine`.
pub fn predict_prompts(
    model: &AnyModel,
    engine: &str,
    xs: &[f64],
    ys: &[f64],
    n: usize,
    k: usize,
) -> Result<Predictions> {
    dispatch!(model, m => predict_prompts_of(m, engine, xs, ys, n, k))
}

/// [`predict_prompts`] for a model of a known precision (the C/C++ handles hold one).
pub fn predict_prompts_of<T: RunScalar>(
    m: &Model<T>,
    engine: &str,
    xs: &[f64],
    ys: &[f64],
    n: usize,
    k: usize,
) -> Result<Predictions> {
    let d = m.spec.d;
    let nk = n.checked_mul(k);
    if n == 0
        || k == 0
        || nk.and_then(|x| x.checked_mul(d)) != Some(xs.len())
        || nk != Some(ys.len())
    {
        return Err(icl_core::Error::Shape(format!(
            "prompts: xs must be [n, k, d] and ys [n, k] with n, k >= 1 and d = {d} (the model's); got {} and {} values for n = {n}, k = {k}",
            xs.len(),
            ys.len()
        ))
        .into());
    }
    if let Some(i) = xs.iter().chain(ys).position(|v| !v.is_finite()) {
        return Err(RunError::Refused(format!(
            "prompts: value {i} is not finite"
        )));
    }
    typed(m, engine, xs, ys, n, k)
}

fn typed<T: RunScalar>(
    m: &Model<T>,
    engine: &str,
    xs: &[f64],
    ys: &[f64],
    n: usize,
    k: usize,
) -> Result<Predictions> {
    let cast = |v: &[f64]| v.iter().map(|&x| T::of(x)).collect::<Vec<T>>();
    if let Net::Gpt2(sp) = &m.spec.net {
        let mut runner = Gpt2Runner::new(T::gpt2_engine(engine)?);
        let mut out = vec![T::zero(); n * k];
        runner.predict(sp, &m.params, &cast(xs), &cast(ys), n, k, &mut out)?;
        return Ok(Predictions {
            shape: vec![n, k],
            values: out.iter().map(|v| v.to_f64()).collect(),
        });
    }
    if k < 2 {
        return Err(icl_core::Error::Shape(
            "prompts: this model reads a context before its query: k >= 2 pairs".into(),
        )
        .into());
    }
    let (d, no) = (m.spec.d, m.spec.n_out);
    if no != 1 {
        return Err(RunError::Refused(format!(
            "prompts: ys [n, k] hold one output per pair; this model has {no}"
        )));
    }
    // the last pair is the query: [x; 0] and its label (unread) as the target
    let len = k - 1;
    let mut z = vec![T::zero(); n * k * (d + 1)];
    let mut y = vec![T::zero(); n];
    for b in 0..n {
        for i in 0..k {
            let tok = &mut z[(b * k + i) * (d + 1)..(b * k + i + 1) * (d + 1)];
            for c in 0..d {
                tok[c] = T::of(xs[(b * k + i) * d + c]);
            }
            if i < len {
                tok[d] = T::of(ys[b * k + i]);
            }
        }
        y[b] = T::of(ys[b * k + len]);
    }
    let batch = Batch::from_parts(n, len, d, 1, z, y)?;
    let mut out = vec![T::zero(); n];
    match &m.spec.net {
        Net::Attention(sp) => {
            let mut runner = Runner::new(T::engine(engine)?);
            let c = m.circuits()?;
            runner.predict(sp, &c, &batch, &mut out)?;
        }
        Net::Stack(sp) => {
            let mut runner = StackRunner::new(T::stack_engine(engine)?);
            let mut c = StackCircuits::zeros(sp);
            circuits_forward(sp, &m.params, &mut c);
            runner.predict(sp, &c, Pass::of(sp), &batch, &mut out)?;
        }
        _ => {
            return Err(RunError::Refused(
                "prompts: the IV model reads instruments besides x and y; predict it through its evaluation (icl eval)".into(),
            ))
        }
    }
    Ok(Predictions {
        shape: vec![n, 1],
        values: out.iter().map(|v| v.to_f64()).collect(),
    })
}

/// `icl predict`: the prompts of the safetensors file `input` (tensors `xs` [n, k, d] and `ys`
/// [n, k], f32 or f64) through `model`, written to `out` as the tensor `pred` (f64), atomically.
pub fn predict_file(
    model: &AnyModel,
    engine: &str,
    input: &Path,
    out: &Path,
) -> Result<Predictions> {
    let bytes = read_safetensors(input)?;
    let f = icl_core::checkpoint::File::parse(&bytes)
        .map_err(|e| RunError::Corrupt(input.to_path_buf(), e.to_string()))?;
    let shape_of = |name: &str, rank: usize| -> Result<Vec<usize>> {
        let t = f.tensor(name).ok_or_else(|| {
            RunError::Refused(format!(
                "{}: no tensor {name:?} (want xs [n, k, d] and ys [n, k])",
                input.display()
            ))
        })?;
        if t.shape.len() != rank {
            return Err(RunError::Refused(format!(
                "{}: {name} has shape {:?}; want rank {rank} (xs [n, k, d], ys [n, k])",
                input.display(),
                t.shape
            )));
        }
        Ok(t.shape.clone())
    };
    let xs_shape = shape_of("xs", 3)?;
    let ys_shape = shape_of("ys", 2)?;
    if ys_shape[..] != xs_shape[..2] {
        return Err(RunError::Refused(format!(
            "{}: xs {:?} and ys {:?} disagree on [n, k]",
            input.display(),
            xs_shape,
            ys_shape
        )));
    }
    let read = |name: &str, shape: &[usize]| {
        f.tensor_required(name)
            .and_then(|t| t.to_f64(shape))
            .map_err(|e| RunError::Corrupt(input.to_path_buf(), e.to_string()))
    };
    let xs = read("xs", &xs_shape)?;
    let ys = read("ys", &ys_shape)?;
    let p = predict_prompts(model, engine, &xs, &ys, xs_shape[0], xs_shape[1])?;
    let bytes = encode(
        &[Raw::new("pred", p.shape.clone(), &p.values)],
        &BTreeMap::new(),
    )?;
    atomic_write(out, &bytes)?;
    Ok(p)
}
